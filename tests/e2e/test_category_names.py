"""Niches named as people know them, end to end over real sockets: the simulator on today's
profile, the service's marketplace client, a monitor's polls and a one-off scrape run, the
names checked against the simulator's ground truth. SQLite only (the store's part, filling a
missing name, is covered on both databases by tests/store)."""

from __future__ import annotations

import uuid

import trio

from engine.runs._task import gather_scrape
from scrapers.simulator import SimulatorConfig
from store import NewRun, Store
from tests.conftest import new_workspace
from tests.e2e.test_market_profiles import database_url, market_of, monitor_at, poll

__all__ = ["database_url"]  # the SQLite-only fixture, used by `store`


def _config() -> SimulatorConfig:
    return SimulatorConfig(seed=8, speed=20_000.0, n_listings=300, arrivals_per_day=600,
                           profile="2026-09", promoted_share=0.1)  # fmt: skip


async def test_a_monitors_listings_carry_their_category_names(store: Store) -> None:
    async with market_of(store, _config()) as market:
        site = market.origins.site
        paths = market.app.world.category_paths
        monitor = await monitor_at(store, f"{site}/catalog?catalog[]=1206&order=newest_first")
        with trio.fail_after(60):
            for _ in range(3):
                await poll(store, market, monitor)
                await trio.sleep(0.3)  # hours of market time: new listings arrive
        listings = [x async for x in store.monitors.iter_listings(monitor.id)]
        assert len(listings) >= 10
        assert {(x.category_id, x.category_name) for x in listings} == {(1206, paths[1206])}
        # Listings first seen by later polls took the name the first poll learned.
        assert len({x.first_seen_at for x in listings}) >= 2


async def test_a_scrape_of_two_categories_names_both(store: Store) -> None:
    async with market_of(store, _config()) as market:
        site = market.origins.site
        paths = market.app.world.category_paths
        run = await store.runs.create(NewRun(
            run_id=f"run_{uuid.uuid4().hex[:12]}", workspace_id=await new_workspace(store),
            label=None, source="url", url=f"{site}/catalog?catalog[]=4881&catalog[]=1812",
            monitor_id=None, max_items=500,
        ))  # fmt: skip
        with trio.fail_after(60):
            evidence = await gather_scrape(store, market.market, run)
        named = {(x.category_id, x.category_name) for x in evidence.listings}
        assert named == {(4881, paths[4881]), (1812, paths[1812])}
        assert paths[4881] == "Kids › Toys & games › Games"  # a path, as the item pages say
