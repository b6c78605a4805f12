"""Sellers' price cuts in the simulator (`SimulatorConfig.price_drop_share`): a listing unsold
after a few days is offered cheaper under the same id; the feed, item pages and the detail API
show its current price, and the ground truth the price each sale was made at. Opt-in: worlds
without it are as they were, and a world with it has the same listings and lives."""

from __future__ import annotations

import dataclasses
import itertools
import re
from decimal import Decimal
from typing import Any

import httpx
import pytest
import trio

from scrapers import ClientSettings, MarketClient, MarketplaceAdapter
from scrapers.simulator import SimulatorConfig, World
from scrapers.simulator._drops import CUT
from scrapers.simulator._world import DAY

from ._sim import simulator

PLAIN = SimulatorConfig(seed=11, n_listings=800, arrivals_per_day=200, horizon_days=20,
                        speed=3600.0)  # fmt: skip
CUTS = dataclasses.replace(PLAIN, price_drop_share=0.5)
_OG_PRICE = re.compile(r'<meta property="og:price:amount" content="([\d.]+)">')


def test_without_cuts_no_listing_changes_price_and_with_them_the_lives_are_the_same() -> None:
    plain, cut = World(PLAIN), World(CUTS)
    assert all(item.drops == () for item in plain.listings)
    assert World(dataclasses.replace(PLAIN, price_drop_share=0.0)).listings == plain.listings
    assert [(i.id, i.born, i.price, i.events, i.relist_of) for i in cut.listings] == [
        (i.id, i.born, i.price, i.events, i.relist_of) for i in plain.listings
    ]
    assert [i.drops for i in World(CUTS).listings] == [i.drops for i in cut.listings]
    with pytest.raises(ValueError, match="price_drop_share"):
        SimulatorConfig(price_drop_share=1.5)


def test_cuts_come_while_the_listing_is_on_sale_and_lower_its_price() -> None:
    world = World(CUTS)
    end = CUTS.start + CUTS.horizon_days * DAY
    cut = [item for item in world.listings if item.drops]
    # Half the listings are drawn a cut; those sold or deleted before it keep their price.
    assert 0.2 < len(cut) / len(world.listings) < 0.5
    assert any(len(item.drops) == 2 for item in cut)
    for item in cut:
        times = [when for when, _ in item.drops]
        assert item.born + DAY <= times[0] and times == sorted(times) and times[-1] < end
        assert all(item.state_at(when) in ("open", "reserved") for when in times), item.id
        prices = [item.price, *(price for _, price in item.drops)]
        for before, after in itertools.pairwise(prices):
            assert Decimal(1) <= after < before
            assert 1 - CUT[1] - 0.01 <= float(after / before) <= 1 - CUT[0] + 0.01
        assert item.price_at(times[0] - 1) == item.price
        assert item.price_at(times[-1]) == prices[-1]


def test_the_truth_sells_at_the_price_at_sale() -> None:
    world = World(CUTS)
    t = CUTS.start + 15 * DAY
    truth: dict[str, Any] = world.truth(t)
    by_id = {item["id"]: item for item in truth["listings"]}
    sold_cut = [i for i in world.listings if i.drops and i.state_at(t) == "sold"]
    assert len(sold_cut) >= 20
    for item in sold_cut:
        shown = by_id[item.id]
        assert shown["price"] == str(item.drops[-1][1])  # cut before the sale, never after
        assert shown["prices"] == [[item.born, str(item.price)],
                                   *([w, str(p)] for w, p in item.drops)]  # fmt: skip


async def test_an_honest_client_sees_the_cut_under_the_same_id(
    autojump_clock: trio.abc.Clock,
) -> None:
    """Poll one category's feed every 6 simulated hours for 3 days: every listing at its price
    in the truth of that instant, some listings cheaper than at the poll before, and the item
    page and the detail API showing the cut price too."""
    settings = ClientSettings.unthrottled()
    cheaper: list[int] = []
    async with simulator(CUTS) as sim, httpx.AsyncClient() as side_door:
        settings = ClientSettings.unthrottled(extra_origins=(sim.origin,))
        async with MarketClient(settings) as client:
            adapter = MarketplaceAdapter(client)
            query = await adapter.query_for(f"{sim.origin}/catalog?catalog[]=1904")
            before: dict[int, Decimal] = {}
            for _round in range(12):
                feed = await adapter.fetch_feed(query, page_cap=20)
                truth = (await side_door.get(f"{sim.origin}/__sim__/truth")).json()
                by_id = {item["id"]: item for item in truth["listings"]}
                for listing in feed.listings:
                    assert listing.price is not None
                    assert str(listing.price) == by_id[listing.id]["price"]
                    if listing.price < before.get(listing.id, listing.price):
                        cheaper.append(listing.id)
                        await _pages_show(side_door, sim.origin, listing.id, listing.price)
                before = {x.id: x.price for x in feed.listings if x.price is not None}
                await trio.sleep(6)  # 6 simulated hours
    assert len(cheaper) >= 3, cheaper


async def _pages_show(http: httpx.AsyncClient, origin: str, item_id: int, price: Decimal) -> None:
    page = await http.get(f"{origin}/items/{item_id}-x")
    match = _OG_PRICE.search(page.text)
    assert match is not None and Decimal(match.group(1)) == price, item_id
    await http.get(f"{origin}/")  # the session the detail API asks for (a cookie)
    details = await http.get(f"{origin}/api/v2/items/{item_id}/details")
    assert Decimal(details.json()["item"]["price"]) == price, item_id
