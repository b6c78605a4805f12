"""The simulator's world, and an honest client's observations against its ground truth."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import httpx
import trio

from scrapers import ClientSettings, ItemState, MarketClient, MarketplaceAdapter
from scrapers.simulator import FeedFilter, SimulatorConfig, World
from scrapers.simulator._world import DAY

from ._sim import simulator

CONFIG = SimulatorConfig(seed=11, n_listings=800, arrivals_per_day=200, horizon_days=20,
                         speed=3600.0)  # fmt: skip


def test_world_is_deterministic() -> None:
    a, b = World(CONFIG), World(CONFIG)
    assert [(i.id, i.events, i.price) for i in a.listings] == [
        (i.id, i.events, i.price) for i in b.listings
    ]
    other = World(SimulatorConfig(seed=12, n_listings=800, arrivals_per_day=200, horizon_days=20))
    assert [i.events for i in other.listings] != [i.events for i in a.listings]


def test_world_lives_are_well_formed() -> None:
    world = World(CONFIG)
    kinds: Counter[str] = Counter()
    for item in world.listings:
        times = [t for t, _ in item.events]
        assert times == sorted(times) and item.events[0] == (item.born, "open")
        states = [s for _, s in item.events]
        assert "sold" not in states[:-1] and "deleted" not in states[:-1]  # terminal states
        kinds.update(states)
        assert item.state_at(item.born - 1) is None
    assert kinds["sold"] > 100 and kinds["deleted"] > 50 and kinds["reserved"] > 20

    def lapsed(events: tuple[tuple[float, str], ...]) -> bool:
        pairs = itertools.pairwise(events)
        return any(a == "reserved" and b == "open" for (_, a), (_, b) in pairs)

    comebacks = [i for i in world.listings if lapsed(i.events)]
    assert comebacks, "some reservations must lapse back to open"
    relisted = [i for i in world.listings if i.relist_of is not None]
    assert relisted and all(
        world.by_id[i.relist_of].state_at(i.born) == "deleted" for i in relisted
    )


def test_planted_niches_behave_as_planted() -> None:
    world = World(CONFIG)
    truth = world.truth(CONFIG.start + 15 * DAY)
    hot = {tuple(k) for k in truth["hot"]}  # type: ignore[attr-defined]
    saturated = {tuple(k) for k in truth["saturated"]}  # type: ignore[attr-defined]
    assert len(hot) == 3 and len(saturated) == 3 and not hot & saturated
    quick: dict[str, list[bool]] = {"hot": [], "saturated": [], "normal": []}
    listed: Counter[tuple[int, int]] = Counter()
    for item in world.listings:
        key = (item.category_id, item.brand_id)
        listed[key] += 1
        kind = "hot" if key in hot else "saturated" if key in saturated else "normal"
        if CONFIG.start <= item.born <= CONFIG.start + 10 * DAY:
            quick[kind].append(item.state_at(item.born + 3 * DAY) == "sold")
    rate = {kind: sum(flags) / len(flags) for kind, flags in quick.items()}
    assert rate["hot"] > 2.5 * rate["normal"] > 2.5 * rate["saturated"]
    assert min(listed[k] for k in saturated) > max(listed[k] for k in hot)  # crowded
    niches = {(n["category_id"], n["brand_id"]): n for n in truth["niches"]}  # type: ignore[attr-defined]
    for key in hot:
        assert niches[key]["kind"] == "hot" and niches[key]["median_sold_price"] is not None


def test_cheaper_listings_sell_faster() -> None:
    world = World(CONFIG)
    t = CONFIG.start + 20 * DAY
    cheap = dear = cheap_sold = dear_sold = 0
    for item in world.listings:
        median = world.niches[(item.category_id, item.brand_id)].median_price
        sold = item.state_at(t) == "sold"
        if item.price < median * 8 / 10:
            cheap, cheap_sold = cheap + 1, cheap_sold + sold
        elif item.price > median * 12 / 10:
            dear, dear_sold = dear + 1, dear_sold + sold
    assert cheap_sold / cheap > 1.5 * (dear_sold / dear)


def test_feed_is_newest_first_and_capped() -> None:
    world = World(SimulatorConfig(seed=2, n_listings=3000, arrivals_per_day=0, max_pages=3))
    items, total, pages = world.feed_page(world.config.start, FeedFilter(), 1, 96)
    assert [i.born for i in items] == sorted((i.born for i in items), reverse=True)
    assert total > 3 * 96 and pages == 3
    assert world.feed_page(world.config.start, FeedFilter(), 4, 96)[0] == []


async def _truth(origin: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as side_door:  # test-only path: never through the scrapers
        response = await side_door.get(f"{origin}/__sim__/truth")
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data


async def test_honest_client_observes_the_ground_truth(autojump_clock: trio.abc.Clock) -> None:
    """Poll one category's feed every 6 simulated hours for 3 days; confirm every drop-out
    through the item detail API; compare with the simulator's truth at the same instant."""
    settings = ClientSettings.unthrottled()
    observed: dict[int, list[ItemState]] = {}
    async with simulator(CONFIG) as sim:
        settings = ClientSettings.unthrottled(extra_origins=(sim.origin,))
        async with MarketClient(settings) as client:
            adapter = MarketplaceAdapter(client)
            query = await adapter.query_for(f"{sim.origin}/catalog?catalog[]=1904")
            known_open: set[int] = set()
            for _round in range(12):
                # Autojump moves time only when every task waits on a timer, so one round's
                # requests and the truth below all see the same simulated instant.
                feed = await adapter.fetch_feed(query, page_cap=20)
                truth = await _truth(sim.origin)
                by_id = {item["id"]: item for item in truth["listings"]}
                open_ids = {i for i, item in by_id.items()
                            if item["state"] == "open" and item["category_id"] == 1904}  # fmt: skip
                feed_ids = {listing.id for listing in feed.listings}
                assert feed.problems == ()
                assert feed_ids == open_ids
                for listing in feed.listings:
                    assert listing.listed_at is not None
                    assert listing.listed_at.timestamp() == int(by_id[listing.id]["history"][0][0])
                    assert str(listing.price) == by_id[listing.id]["price"]
                for item_id in sorted(known_open - feed_ids):
                    state = await adapter.fetch_item_state(sim.origin, item_id)
                    assert state.value == by_id[item_id]["state"], item_id
                    observed.setdefault(item_id, []).append(state)
                known_open = feed_ids
                await trio.sleep(6)  # 6 simulated hours
    seen = Counter(states[-1] for states in observed.values())
    assert seen[ItemState.SOLD] >= 5 and seen[ItemState.DELETED] >= 1
    assert sum(seen.values()) == len(observed)
