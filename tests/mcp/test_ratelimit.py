"""300 requests per minute per client IP on /mcp; X-Forwarded-For only from a trusted proxy."""

from __future__ import annotations

import httpx
import pytest
import trio

from api.settings import Settings
from engine import Marketplace
from tests.api.helpers import assert_envelope
from tests.conftest import start_service
from tests.mcp.helpers import post, request

LIMIT = 300


@pytest.fixture
def database_url(sqlite_url: str) -> str:
    return sqlite_url


async def _burst(client: httpx.AsyncClient, count: int, forwarded_for: list[str]) -> list[int]:
    """`count` pings, the i-th claiming to come from `forwarded_for[i % len]`."""
    codes = []
    for i in range(count):
        headers = {"X-Forwarded-For": forwarded_for[i % len(forwarded_for)]}
        codes.append((await post(client, request("ping", id=i), headers)).status_code)
    return codes


async def test_the_301st_request_is_429_and_other_ips_are_unaffected(
    settings: Settings, market: Marketplace, nursery: trio.Nursery
) -> None:
    trusted = settings.model_copy(update={"trusted_proxies": ("127.0.0.1",)})
    service, stop = await start_service(nursery, trusted, market)
    async with service.client() as client:
        assert await _burst(client, LIMIT, ["203.0.113.7"]) == [200] * LIMIT
        over = await post(client, request("ping"), {"X-Forwarded-For": "203.0.113.7"})
        body = assert_envelope(over, 429, "rate_limited")
        assert 1 <= int(over.headers["retry-after"]) <= 60
        assert body["retry_after_seconds"] == int(over.headers["retry-after"])
        # Discovery is behind the same limit.
        assert (
            await client.get("/mcp/manifest", headers={"X-Forwarded-For": "203.0.113.7"})
        ).status_code == 429
        other = await post(client, request("ping"), {"X-Forwarded-For": "203.0.113.8"})
        assert other.status_code == 200
    stop.set()


async def test_forwarded_for_is_ignored_without_a_trusted_proxy(
    settings: Settings, market: Marketplace, nursery: trio.Nursery
) -> None:
    assert settings.trusted_proxies == ()
    service, stop = await start_service(nursery, settings, market)
    async with service.client() as client:
        # Every request claims another IP; all count against the socket peer.
        spoofed = [f"198.51.100.{i % 250}" for i in range(LIMIT)]
        assert await _burst(client, LIMIT, spoofed) == [200] * LIMIT
        over = await post(client, request("ping"), {"X-Forwarded-For": "192.0.2.99"})
        assert_envelope(over, 429, "rate_limited")
    stop.set()
