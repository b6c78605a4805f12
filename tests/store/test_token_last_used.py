"""An access token's `last_used_at` is written at most once a minute: an agent's every call
would otherwise be a write (both databases)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from store import NewAccessToken, NewUser, Store, open_store

T0 = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)


async def test_last_used_is_written_at_most_once_a_minute(database_url: str) -> None:
    now = [T0]
    async with open_store(database_url, clock=lambda: now[0]) as store:
        token_hash = await _token(store)
        for at, stamped in (
            (T0, T0),  # first use: stamped
            (T0 + timedelta(seconds=30), T0),  # within the minute: left alone
            (T0 + timedelta(seconds=59), T0),
            (T0 + timedelta(seconds=61), T0 + timedelta(seconds=61)),  # a minute on: stamped
            (T0 + timedelta(seconds=90), T0 + timedelta(seconds=61)),
        ):
            now[0] = at
            owner = await store.use_access_token(token_hash)
            assert owner is not None and owner.token.last_used_at == stamped, at
            listed = await store.list_access_tokens(owner.user.id)
            assert [t.last_used_at for t in listed] == [stamped]


async def _token(store: Store) -> str:
    user = await store.create_user(NewUser(
        user_id="usr_stamp", workspace_id="wsp_stamp", email="stamp@example.com",
        name=None, password_hash=None,
    ))  # fmt: skip
    await store.add_access_token(NewAccessToken(
        token_id="key_stamp", user_id=user.id, workspace_id=user.workspace_id,
        label="agent", scopes=("read",), token_hash="hash_stamp",
    ))  # fmt: skip
    return "hash_stamp"
