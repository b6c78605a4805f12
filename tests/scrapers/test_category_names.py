"""Category names learned from item pages: the cache's policy (no sockets), then the adapter
reading them from the simulator's pages over real sockets."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import trio

from scrapers import (
    PROFILES,
    CataloguePage,
    ItemDetail,
    ItemState,
    Listing,
    MarketplaceAdapter,
    SiteMap,
    parse_catalogue_url,
)
from scrapers._category_names import DAY, FIRST_BACKOFF, CategoryNames
from scrapers.errors import HttpStatusError
from scrapers.simulator import SimulatorConfig
from scrapers.simulator._world import CATEGORY_PATHS

from ._sim import client_for, simulator

SITE = "https://www.vinted.it"


class Pages:
    """A fake item-page reader: each item's category name, or an error; every call counted."""

    def __init__(self, names: dict[int, str], failing: frozenset[int] = frozenset()) -> None:
        self.names, self.failing = names, failing
        self.asked: list[int] = []

    async def __call__(self, origin: str, item_id: int) -> ItemDetail:
        self.asked.append(item_id)
        if item_id in self.failing:
            raise HttpStatusError(f"{origin}/items/{item_id}", 503)
        listing = Listing(id=item_id, category_name=self.names.get(item_id))
        return ItemDetail(item_id, ItemState.OPEN, listing, evidence="item_page")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _feed(*listings: Listing) -> CataloguePage:
    return CataloguePage(listings=listings)


async def test_each_category_is_named_from_its_first_organic_listing() -> None:
    names = CategoryNames(clock=Clock())
    pages = Pages({2: "Women › Clothing › Jeans", 3: "Men › Shoes › Sneakers"})
    feed = _feed(
        Listing(id=1, category_id=1904, promoted=True),  # paid placement: not asked
        Listing(id=2, category_id=1904),
        Listing(id=3, category_id=257),
        Listing(id=4, category_id=257, category_name="Its own page's name"),
        Listing(id=5),  # no category: nothing to name
    )
    named = await names.name_feed(SITE, feed, pages)
    assert pages.asked == [2, 3]
    assert [x.category_name for x in named.listings] == [
        "Women › Clothing › Jeans", "Women › Clothing › Jeans", "Men › Shoes › Sneakers",
        "Its own page's name", None,
    ]  # fmt: skip
    again = await names.name_feed(SITE + "/", feed, pages)  # known: no page read
    assert pages.asked == [2, 3] and again.listings[1].category_name == "Women › Clothing › Jeans"
    # Names are per site: another site's pages say its own localised names.
    await names.name_feed("https://www.vinted.fr", feed, Pages({2: "Femmes"}))
    assert names.name_of("https://www.vinted.fr", 1904) == "Femmes"
    assert names.name_of(SITE, 1904) == "Women › Clothing › Jeans"


async def test_a_failing_page_fails_no_feed_and_is_asked_with_backoff() -> None:
    clock = Clock()
    names = CategoryNames(clock=clock)
    pages = Pages({3: "Men › Shoes › Sneakers"}, failing=frozenset({2}))
    feed = _feed(Listing(id=2, category_id=1904), Listing(id=3, category_id=257))
    asked_at: list[float] = []
    for _ in range(200):  # a poll every minute for 200 minutes
        before = len(pages.asked)
        named = await names.name_feed(SITE, feed, pages)
        asked_at += [clock.now] * pages.asked[before:].count(2)
        assert named.listings[0].category_name is None
        assert named.listings[1].category_name == "Men › Shoes › Sneakers"
        clock.now += 60.0
    # Asked at once, then 10, 20, 40, 80 minutes later: 5 times in 200 polls, not 200.
    assert [t - asked_at[0] for t in asked_at] == [0.0, 600.0, 1800.0, 4200.0, 9000.0]
    assert pages.asked.count(3) == 1
    pages.failing = frozenset()
    pages.names[2] = "Women › Clothing › Jeans"
    clock.now = asked_at[-1] + 2 * 4800.0
    named = await names.name_feed(SITE, feed, pages)
    assert named.listings[0].category_name == "Women › Clothing › Jeans"


async def test_names_are_read_again_daily_and_kept_while_a_reading_fails() -> None:
    clock = Clock()
    names = CategoryNames(clock=clock)
    pages = Pages({2: "Women › Jeans"})
    feed = _feed(Listing(id=2, category_id=1904))
    await names.name_feed(SITE, feed, pages)
    clock.now += DAY - 1
    await names.name_feed(SITE, feed, pages)
    assert pages.asked == [2]
    clock.now += 1
    pages.failing = frozenset({2})
    named = await names.name_feed(SITE, feed, pages)
    assert pages.asked == [2, 2] and named.listings[0].category_name == "Women › Jeans"
    clock.now += FIRST_BACKOFF
    pages.failing = frozenset()
    pages.names[2] = "  Women ›\n Clothing › Jeans  "
    named = await names.name_feed(SITE, feed, pages)
    assert named.listings[0].category_name == "Women › Clothing › Jeans"  # one clean line


async def test_a_page_naming_no_category_is_asked_daily_and_memory_is_bounded() -> None:
    clock = Clock()
    names = CategoryNames(clock=clock, kept=3)
    pages = Pages({})  # the legacy pages: no JSON-LD category
    feed = _feed(Listing(id=2, category_id=1904))
    for _ in range(3):
        await names.name_feed(SITE, feed, pages)
        clock.now += DAY / 2
    assert pages.asked == [2, 2]  # at 0 and a day later
    for category in range(10):
        await names.name_feed(SITE, _feed(Listing(id=100 + category, category_id=category)),
                              Pages({100 + category: f"c{category}"}))  # fmt: skip
    assert len(names._entries) == 3
    assert names.name_of(SITE, 9) == "c9" and names.name_of(SITE, 0) is None


def test_a_legacy_item_page_names_its_category_only_from_json_ld() -> None:
    item = {"id": 9, "title": "t", "is_closed": False, "is_reserved": False, "catalog_id": 1904}
    store = json.dumps({"itemsStore": {"item": item}})
    plain = (
        "<html><body><script type='application/json' data-js-react-on-rails-store='MainStore'>"
        f"{store}</script></body></html>"
    )
    product = {"@type": "Product", "category": "Women › Clothing › Jeans", "offers": {}}
    with_ld = plain.replace(
        "<body>", f'<body><script type="application/ld+json">{json.dumps(product)}</script>'
    )
    site = SiteMap().site("https://www.vinted.fr")
    legacy = PROFILES["legacy"]
    assert legacy.parse_item_page(plain.encode(), site, 9).listing.category_name is None
    detail = legacy.parse_item_page(with_ld.encode(), site, 9)
    assert detail.listing.category_name == "Women › Clothing › Jeans"
    assert detail.listing.category_id == 1904 and detail.state is ItemState.OPEN


async def test_the_adapter_names_each_feed_category_from_one_simulator_page() -> None:
    config = SimulatorConfig(seed=3, n_listings=300, profile="2026-09", promoted_share=0.2)
    async with simulator(config) as sim, client_for(sim.origin) as client:
        adapter = MarketplaceAdapter(client, profile="2026-09")
        query = parse_catalogue_url(f"{sim.origin}/catalog?catalog[]=1904&catalog[]=257")
        with trio.fail_after(30):
            feed = await adapter.fetch_feed(query, 1)
            by_category = {(x.category_id, x.category_name) for x in feed.listings}
            assert by_category == {(c, CATEGORY_PATHS[c]) for c in (1904, 257)}
            pages = [r for r in sim.requests() if str(r["path"]).startswith("/items/")]
            # One page per category, at the URL the feed gave (no redirect), of an organic one.
            assert len(pages) == 2 and all(r["status"] == 200 for r in pages)
            organic = {x.id for x in feed.listings if not x.promoted}
            assert {int(str(r["path"]).split("/")[2].split("-")[0]) for r in pages} <= organic
            await adapter.fetch_feed(query, 1)  # known now: no page read
            assert len([r for r in sim.requests() if str(r["path"]).startswith("/items/")]) == 2


async def test_a_refused_item_page_fails_no_feed_and_is_not_asked_every_feed() -> None:
    robots = "User-agent: *\nDisallow: /items/\n"
    config = SimulatorConfig(seed=3, n_listings=200, profile="2026-09", robots_txt=robots)
    async with simulator(config) as sim, client_for(sim.origin) as client:
        adapter = MarketplaceAdapter(client, profile="2026-09")
        read = adapter.read_item_page
        asked: list[int] = []

        async def counted(origin: str, item_id: int) -> ItemDetail:
            asked.append(item_id)
            return await read(origin, item_id)

        adapter.read_item_page = counted  # type: ignore[method-assign]
        query = parse_catalogue_url(f"{sim.origin}/catalog?catalog[]=1231")
        with trio.fail_after(30):
            for _ in range(4):
                feed = await adapter.fetch_feed(query, 1)
                assert feed.listings and all(x.category_id == 1231 for x in feed.listings)
                assert all(x.category_name is None for x in feed.listings)
        assert len(asked) == 1  # then resting for its backoff
        assert not [r for r in sim.requests() if urlsplit(str(r["path"])).path.startswith("/items")]
