"""Sockets open only to addresses the SSRF guard accepted (scrapers/_pinned.py)."""

from __future__ import annotations

import httpx
import pytest

from scrapers import ClientSettings, MarketClient, UrlRefused
from scrapers._pinned import GuardedBackend, GuardedTransport
from scrapers.simulator import SimulatorConfig

from ._sim import simulator

PUBLIC = "151.101.1.1"


async def test_a_dns_answer_that_turns_private_before_connecting_is_refused() -> None:
    """DNS rebinding: the guard's look-up answers a public address, the next one (when the
    socket would open) a loopback one. The connection is refused, not made."""
    answers = [[PUBLIC], ["127.0.0.1"]]
    asked: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        asked.append(host)
        return answers[min(len(asked), len(answers)) - 1]

    # No DNS cache, so that the connection looks the name up again (a cached answer is the
    # one the guard checked, which is the point of the cache; this is the worst case).
    settings = ClientSettings.unthrottled(dns_cache_ttl=0.0, max_retries=0)
    async with MarketClient(settings, resolver=rebinding) as client:
        with pytest.raises(UrlRefused, match="non-public address"):
            await client.get("https://www.vinted.fr/catalog")
    assert asked == ["www.vinted.fr", "www.vinted.fr"]


async def test_the_socket_goes_to_the_checked_address_not_to_the_name() -> None:
    """`market.test` resolves nowhere on this machine (a reserved name), so only a connection
    to the address our resolver gave, the one the check saw, can reach the server."""
    checked: list[tuple[str, str]] = []

    def accept_all(url: str, address: str) -> None:
        checked.append((url, address))

    async with simulator(SimulatorConfig(seed=5, n_listings=20)) as sim:
        port = int(sim.origin.rsplit(":", 1)[1])

        async def resolve(host: str, port: int) -> list[str]:
            assert host == "market.test"
            return ["127.0.0.1"]

        backend = GuardedBackend(resolve, check=accept_all)
        transport = GuardedTransport(backend, httpx.Limits(max_connections=2))
        async with httpx.AsyncClient(transport=transport) as http:
            response = await http.get(f"http://market.test:{port}/robots.txt")
    assert response.status_code == 200
    assert checked == [(f"//market.test:{port}", "127.0.0.1")]


async def test_allowlisted_origins_are_connected_by_name_unchecked() -> None:
    async def no_dns(host: str, port: int) -> list[str]:
        raise AssertionError("an allowlisted origin needs no look-up of ours")

    def refuse_all(url: str, address: str) -> None:
        raise UrlRefused(url, "refused")

    async with simulator(SimulatorConfig(seed=5, n_listings=20)) as sim:
        backend = GuardedBackend(no_dns, (sim.origin,), check=refuse_all)
        transport = GuardedTransport(backend, httpx.Limits(max_connections=2))
        async with httpx.AsyncClient(transport=transport) as http:
            response = await http.get(f"{sim.origin}/robots.txt")
    assert response.status_code == 200
