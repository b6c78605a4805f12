"""A credential ended while a lookup of it is in flight stays ended (#33, item 2).

Before: a request whose cache miss read a token (or session) from the database before its
revocation committed wrote it into the credential cache after the revocation had cleared
it, so the revoked token kept working for the cache's 30 s (4 of 10 trials over loopback);
a password reset took the same path. Now every ending bumps the cache's generation and an
insert carries the generation read before its lookup (`api/http/sessions.py`), so a lookup
that raced an ending is answered but never cached.

The interleaving is driven, not timed: the store's lookup is held, after it has read the
database, until the ending has committed and cleared the cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import pytest
import trio
from quart.typing import TestClientProtocol as Client
from quart_trio import QuartTrio

from api.app import create_app
from api.http.security import new_secret
from api.http.sessions import CredentialCache
from api.process.node import open_node
from api.services import app_services
from api.settings import Settings
from store import SessionOwner, Store, TokenOwner, UserRecord
from tests.api.helpers import PASSWORD
from tests.conftest import unique_email
from tests.engine.fake_market import FakeMarket

OwnerT = TypeVar("OwnerT", SessionOwner, TokenOwner)
Lookup = Callable[[str], Awaitable[OwnerT | None]]


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[QuartTrio]:
    """The real app over a real store and engine, called in-process, so that the test can
    hold the store's lookups where it wants them."""
    async with open_node(settings, role="serve", market=FakeMarket()) as node:
        store, engine = node
        app = create_app(store=store, engine=engine, settings=settings)
        async with app.test_app():  # its start-up and shutdown, as when served
            yield app


def _store(app: QuartTrio) -> Store:
    return app_services(app).store


async def _signed_in(app: QuartTrio) -> tuple[Client, str]:
    """A client holding a session cookie not yet looked up (so not cached), and its user's
    id."""
    client = app.test_client()
    email = unique_email("raced")
    account = {"email": email, "password": PASSWORD}
    assert (await client.post("/api/auth/register", json=account)).status_code == 201
    assert (await client.post("/api/auth/login", json=account)).status_code == 200
    credentials = await _store(app).get_credentials(email)
    assert credentials is not None
    return client, credentials.user.id


class HeldLookup:
    """Wraps a store lookup: its first call reads the database, then waits for `release`
    before answering (a request that read the credential alive and has not yet cached it)."""

    def __init__(self, lookup: Lookup[OwnerT]) -> None:
        self._lookup = lookup
        self.has_read = trio.Event()
        self.release = trio.Event()

    async def __call__(self, digest: str) -> OwnerT | None:
        owner = await self._lookup(digest)
        if not self.has_read.is_set():
            self.has_read.set()
            await self.release.wait()
        return owner


async def _race(
    held: HeldLookup, in_flight: Callable[[], Awaitable[int]], end: Callable[[], Awaitable[None]]
) -> int:
    """Run `in_flight` until its lookup has read the credential, then `end` it, then let the
    lookup answer; the in-flight request's status."""
    statuses: list[int] = []

    async def request() -> None:
        statuses.append(await in_flight())

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(request)
            await held.has_read.wait()
            await end()
            held.release.set()
    return statuses[0]


async def test_a_token_revoked_during_its_lookup_is_not_cached(
    app: QuartTrio, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, _ = await _signed_in(app)
    minted = await owner.post("/api/account/keys", json={"label": "agent", "scopes": ["read"]})
    assert minted.status_code == 201
    key = await minted.get_json()
    agent = app.test_client()
    bearer = {"Authorization": f"Bearer {key['token']}"}

    async def call() -> int:
        return (await agent.get("/api/auth/me", headers=bearer)).status_code

    async def revoke() -> None:
        assert (await owner.delete(f"/api/account/keys/{key['id']}")).status_code == 200

    held = HeldLookup(_store(app).use_access_token)
    monkeypatch.setattr(_store(app), "use_access_token", held)
    # Read before the revocation committed: this one request may still pass.
    assert await _race(held, call, revoke) in (200, 401)
    assert await call() == 401, "the revoked token was put back in the cache"


async def test_a_session_ended_by_a_reset_during_its_lookup_is_not_cached(
    app: QuartTrio, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser, user_id = await _signed_in(app)
    svc = app_services(app)
    secret = new_secret()
    await svc.store.add_password_reset(
        token_hash=svc.hasher.digest(secret),
        user_id=user_id,
        expires_at=svc.store.clock() + timedelta(minutes=10),
    )

    async def call() -> int:
        return (await browser.get("/api/auth/me")).status_code

    async def reset() -> None:
        changed = await app.test_client().post(
            "/api/auth/reset-password", json={"token": secret, "password": "a new password 1"}
        )
        assert changed.status_code == 200

    held = HeldLookup(svc.store.find_session)
    monkeypatch.setattr(svc.store, "find_session", held)
    assert await _race(held, call, reset) in (200, 401)
    assert await call() == 401, "the ended session was put back in the cache"


async def test_another_nodes_ending_during_a_lookup_keeps_it_out_of_the_cache() -> None:
    """In a cluster the ending arrives as a notification (`session_ended`), maybe between a
    lookup's read and its insert; or the listener reconnected and everything may be stale."""
    for notice in ("digest-1", None):
        cache = CredentialCache()
        looked_up_at = cache.generation()
        cache.session_ended(notice)
        cache.put("digest-1", _a_session_owner(), looked_up_at=looked_up_at)
        assert cache.get("digest-1") is None
    fresh = CredentialCache()
    fresh.put("digest-1", owner := _a_session_owner(), looked_up_at=fresh.generation())
    assert fresh.get("digest-1") == owner


def _a_session_owner() -> SessionOwner:
    now = datetime.now(UTC)
    user = UserRecord(
        id="usr_1", email="a@example.com", name=None, workspace_id="ws_1", created_at=now
    )
    return SessionOwner(user=user, expires_at=now + timedelta(days=1))
