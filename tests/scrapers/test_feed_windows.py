"""A feed's windows (`CataloguePage.windows`): the organic listings in the feed's order, which is
publication order and not id order once drafts publish under old ids, whether the page cap cut
the reading, and one window per category; against the simulator over real sockets."""

from __future__ import annotations

import itertools

import trio

from scrapers import MarketplaceAdapter, parse_catalogue_url
from scrapers.simulator import SimulatorConfig

from ._sim import client_for, simulator

CONFIG = SimulatorConfig(
    seed=4, n_listings=400, profile="2026-09", promoted_share=0.2, draft_share=0.3
)
DAYS = 2 * 86_400 / CONFIG.speed  # trio seconds in which two days of listings are published


async def test_a_cut_feed_s_window_is_its_organic_listings_in_publication_order(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with simulator(CONFIG) as sim, client_for(sim.origin) as client:
        adapter = MarketplaceAdapter(client, profile="2026-09", per_page=24)
        query = parse_catalogue_url(f"{sim.origin}/catalog")
        await adapter.fetch_feed(query, 1)  # the market's clock starts
        await trio.sleep(DAYS)
        feed = await adapter.fetch_feed(query, 2)
        (window,) = feed.windows
        assert window.cut and window.category_id is None
        assert window.organic == tuple(x.id for x in feed.listings if not x.promoted)
        assert any(x.promoted for x in feed.listings) and len(window.organic) >= 40
        born = [sim.app.world.by_id[i].born for i in window.organic]
        assert born == sorted(born, reverse=True)  # newest published first...
        pairs = itertools.pairwise(window.organic)
        assert any(newer < older for newer, older in pairs)  # ...not newest id first
        whole = await adapter.fetch_feed(query, 100)
        assert not whole.windows[0].cut


async def test_several_categories_keep_a_window_each() -> None:
    async with simulator(CONFIG) as sim, client_for(sim.origin) as client:
        adapter = MarketplaceAdapter(client, profile="2026-09", per_page=24)
        query = parse_catalogue_url(f"{sim.origin}/catalog?catalog[]=1904&catalog[]=257")
        with trio.fail_after(30):
            feed = await adapter.fetch_feed(query, 1)
        assert {w.category_id: w.cut for w in feed.windows} == {1904: False, 257: True}
        category = {x.id: x.category_id for x in feed.listings}
        for window in feed.windows:
            assert {category[i] for i in window.organic} == {window.category_id}
