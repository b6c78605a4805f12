from __future__ import annotations

from datetime import timedelta

import pytest
import trio

from store import AlreadyExists, NewAccessToken, NewUser, Store
from tests.conftest import unique_email


async def _user(store: Store, email: str | None = None) -> str:
    user = await store.create_user(
        NewUser(
            user_id=f"usr_{trio.current_time()}",
            workspace_id=f"ws_{trio.current_time()}",
            email=email or unique_email(),
            name=None,
            password_hash="hash",
        )
    )
    return user.id


async def test_duplicate_email_is_refused_and_nothing_half_written(store: Store) -> None:
    email = unique_email()

    def named(name: str) -> NewUser:
        """A user of `email` called `name`, with ids of its own."""
        tag = name.lower() + email
        return NewUser(
            user_id=f"usr_{tag}",
            workspace_id=f"ws_{tag}",
            email=email,
            name=name,
            password_hash="h",
        )

    await store.create_user(named("A"))
    with pytest.raises(AlreadyExists):
        await store.create_user(named("B"))
    credentials = await store.get_credentials(email)
    assert credentials is not None
    assert credentials.user.name == "A"


async def test_expired_session_is_not_found(store: Store) -> None:
    user_id = await _user(store)
    await store.add_session(
        token_hash="live" + user_id, user_id=user_id, expires_at=store.clock() + timedelta(days=1)
    )
    await store.add_session(
        token_hash="dead" + user_id,
        user_id=user_id,
        expires_at=store.clock() - timedelta(seconds=1),
    )
    assert (await store.find_session("live" + user_id)) is not None
    assert (await store.find_session("dead" + user_id)) is None
    assert (await store.delete_expired())["sessions"] >= 1


async def test_reset_token_is_single_use_even_when_raced(store: Store) -> None:
    user_id = await _user(store)
    await store.add_session(
        token_hash="s" + user_id, user_id=user_id, expires_at=store.clock() + timedelta(days=1)
    )
    await store.add_password_reset(
        token_hash="r" + user_id, user_id=user_id, expires_at=store.clock() + timedelta(hours=1)
    )
    results: list[list[str] | None] = []

    async def use() -> None:
        results.append(await store.reset_password("r" + user_id, "new-hash", revoke_tokens=True))

    async with trio.open_nursery() as nursery:
        for _ in range(5):
            nursery.start_soon(use)
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert winners[0] == ["s" + user_id]
    assert (await store.find_session("s" + user_id)) is None


async def test_revoked_token_is_not_usable_and_last_used_is_stamped(store: Store) -> None:
    user_id = await _user(store)
    user = await store.get_user(user_id)
    assert user is not None
    record = await store.add_access_token(
        NewAccessToken(
            token_id="key_" + user_id,
            user_id=user_id,
            workspace_id=user.workspace_id,
            label="ci",
            scopes=("read",),
            token_hash="t" + user_id,
        )
    )
    assert record.last_used_at is None
    owner = await store.use_access_token("t" + user_id)
    assert owner is not None and owner.token.last_used_at is not None
    assert owner.token.scopes == ("read",)
    await store.revoke_access_token(user_id=user_id, token_id=record.id)
    assert (await store.use_access_token("t" + user_id)) is None
    other = await _user(store)
    assert (await store.revoke_access_token(user_id=other, token_id=record.id)) is None
