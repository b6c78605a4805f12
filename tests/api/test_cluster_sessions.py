"""Cluster mode: a session ended on one node is refused by every node at once, though each
caches session look-ups for 30 s (api/http/sessions.py)."""

from __future__ import annotations

import pytest
import trio

from api.settings import Settings
from tests.api.helpers import bearer, create_token, signed_in
from tests.conftest import start_service

pytestmark = pytest.mark.postgres

ENOUGH = 5.0  # seconds: a NOTIFY takes milliseconds; the cache alone would take 30 s


@pytest.fixture
def database_url(postgres_url: str) -> str:
    return postgres_url


async def test_a_logout_on_one_node_ends_the_session_on_the_others(
    settings: Settings, nursery: trio.Nursery
) -> None:
    node_a, _ = await start_service(nursery, settings.model_copy(update={"node_id": "node-a"}))
    node_b, _ = await start_service(nursery, settings.model_copy(update={"node_id": "node-b"}))
    async with node_a.client() as on_a, node_b.client() as on_b:
        await signed_in(on_a)
        cookie = {"Cookie": f"session_token={on_a.cookies['session_token']}"}
        # Node B reads the session once, and caches it.
        assert (await on_b.get("/api/auth/me", headers=cookie)).status_code == 200
        assert (await on_a.post("/api/auth/logout")).is_success
        with trio.move_on_after(ENOUGH):
            while (await on_b.get("/api/auth/me", headers=cookie)).status_code == 200:
                await trio.sleep(0.05)
        refused = await on_b.get("/api/auth/me", headers=cookie)
    assert refused.status_code == 401, refused.text


async def test_a_token_revoked_on_one_node_is_refused_by_the_others(
    settings: Settings, nursery: trio.Nursery
) -> None:
    """Tokens are cached like sessions (no database read per agent call): a revocation is
    announced the same way."""
    node_a, _ = await start_service(nursery, settings.model_copy(update={"node_id": "node-a"}))
    node_b, _ = await start_service(nursery, settings.model_copy(update={"node_id": "node-b"}))
    async with node_a.client() as on_a, node_b.client() as on_b:
        await signed_in(on_a)
        token = await create_token(on_a, ["read"])
        key_id = (await on_a.get("/api/account/keys")).json()["keys"][0]["id"]
        # Node B reads the token once, and caches it.
        assert (await on_b.get("/api/auth/me", headers=bearer(token))).status_code == 200
        assert (await on_a.delete(f"/api/account/keys/{key_id}")).is_success
        with trio.move_on_after(ENOUGH):
            while (await on_b.get("/api/auth/me", headers=bearer(token))).status_code == 200:
                await trio.sleep(0.05)
        refused = await on_b.get("/api/auth/me", headers=bearer(token))
    assert refused.status_code == 401, refused.text
