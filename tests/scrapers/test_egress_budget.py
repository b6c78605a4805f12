"""One request budget per egress: the marketplace counts requests per IP address across all of
its sites, so two sites polled through one egress share one bucket, and a 429 from either
holds both. Over real sockets, two simulated sites, timed by their own request logs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from scrapers import ClientSettings, MarketClient
from scrapers.simulator import Faults, SimulatorConfig
from tests.scrapers._sim import Running, simulator

RATE = 4.0
BURST = 2


@asynccontextmanager
async def two_sites() -> AsyncIterator[tuple[Running, Running, MarketClient]]:
    async with (
        simulator(SimulatorConfig(seed=1, n_listings=50)) as first,
        simulator(SimulatorConfig(seed=2, n_listings=50)) as second,
    ):
        settings = ClientSettings(
            extra_origins=(first.origin, second.origin), rate=RATE, burst=BURST, concurrency=8
        )
        async with MarketClient(settings, seed=3) as client:
            yield first, second, client


def arrivals(*sites: Running) -> list[float]:
    return sorted(float(r["t"]) for site in sites for r in site.app.log)  # type: ignore[arg-type]


async def test_two_sites_on_one_egress_never_exceed_its_rate() -> None:
    async with two_sites() as (first, second, client):

        async def hammer(site: Running) -> None:
            for page in range(1, 13):
                await client.get(f"{site.origin}/api/v2/catalog/items?page={page}", api=True)

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(hammer, first)
                nursery.start_soon(hammer, second)
        times = arrivals(first, second)
        status = client.egress

    assert len(times) >= 24 and status.name == "direct"
    assert {bool(first.app.log), bool(second.app.log)} == {True}
    # Whatever window is looked at, the two sites together got no more than the rate allows
    # (plus the burst a bucket may save up, and a little scheduling slack).
    for window in (1.0, 2.0, 4.0):
        for i, start in enumerate(times):
            inside = sum(1 for t in times[i:] if t < start + window)
            assert inside <= RATE * window + BURST + 1, (window, inside)
    overall = (len(times) - BURST) / (times[-1] - times[0])
    assert overall <= RATE * 1.1, overall


async def test_a_429_from_one_site_holds_every_site_of_the_egress() -> None:
    async with two_sites() as (first, second, client):
        await client.get(f"{first.origin}/api/v2/catalog/items?page=1", api=True)
        await client.get(f"{second.origin}/api/v2/catalog/items?page=1", api=True)
        first.app.set_faults(Faults(first_429=1, retry_after=3))

        async def refused_site() -> None:
            await client.get(f"{first.origin}/api/v2/catalog/items?page=2", api=True)

        async def other_site() -> None:
            for page in range(2, 5):
                await client.get(f"{second.origin}/api/v2/catalog/items?page={page}", api=True)

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(refused_site)
                await trio.sleep(0.5)  # the 429 has arrived: the egress is held
                nursery.start_soon(other_site)
        refused = next(r for r in first.app.log if r["status"] == 429)
        held_until = float(refused["t"]) + 3  # type: ignore[arg-type]
        second_after = [
            float(r["t"])  # type: ignore[arg-type]
            for r in second.app.log
            if float(r["t"]) > float(refused["t"])  # type: ignore[arg-type]
        ]

    assert second_after, "the other site was asked again"
    assert min(second_after) >= held_until - 0.05, (min(second_after), held_until)
