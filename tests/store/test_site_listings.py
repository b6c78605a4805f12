"""A listing's description is stored once per site, however many monitors see it (#31), on
both databases: each monitor keeps its own side (when it saw the listing, its state, the
price it last saw), and shows the site's newest description."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import trio
from sqlalchemy import text

from engine import decide_poll
from store import ObservedListing, PollOutcome, Store
from tests.conftest import new_monitor

FR = "https://www.vinted.fr/catalog"


def _seen(
    item_id: int, title: str, price: Decimal = Decimal("20.00"), **fields: Any
) -> ObservedListing:
    return ObservedListing(item_id, title=title, brand="Levi's", price=price, **fields)


async def _poll(store: Store, monitor_id: str, seen: list[ObservedListing], minute: int) -> None:
    at = store.clock() + timedelta(minutes=minute)
    await store.monitors.record_poll(
        monitor_id,
        PollOutcome(
            poll_id=f"poll_{uuid.uuid4().hex}", started_at=at, finished_at=at, pages=1,
            seen=tuple(seen), confirmed=(), next_poll_at=at + timedelta(minutes=1),
            observed_at=at, clock="market",
        ),
        decide=decide_poll,
    )  # fmt: skip


async def _rows(store: Store, sql: str) -> list[tuple[Any, ...]]:
    return await store.unit(lambda db: [tuple(r) for r in db.execute(text(sql))])


async def _shown(store: Store, monitor_id: str) -> dict[int, tuple[Any, ...]]:
    return {
        x.item_id: (x.title, x.seller_id, x.price, x.state)
        async for x in store.monitors.iter_listings(monitor_id)
    }


async def test_two_monitors_of_a_site_store_a_listing_once(store: Store) -> None:
    a = await new_monitor(store, url=FR + "?brand_ids[]=10")
    b = await new_monitor(store, url=FR + "?search_text=levis")
    other_site = await new_monitor(store, url="https://www.vinted.de/catalog")
    await _poll(store, a.id, [_seen(1, "Jeans 501", seller_id=7), _seen(2, "Jacket")], 0)
    await _poll(store, b.id, [_seen(1, "Jeans 501"), _seen(3, "Shirt")], 1)
    await _poll(store, other_site.id, [_seen(1, "Hose")], 1)
    described = await _rows(store, "SELECT site, item_id, title FROM site_listings ORDER BY 1, 2")
    assert described == [
        ("https://www.vinted.de", 1, "Hose"),
        ("https://www.vinted.fr", 1, "Jeans 501"),
        ("https://www.vinted.fr", 2, "Jacket"),
        ("https://www.vinted.fr", 3, "Shirt"),
    ]
    assert (await _rows(store, "SELECT count(*) FROM monitor_listings"))[0][0] == 5
    # b's sighting did not give the seller: what a knew stays, and both show it.
    price = Decimal("20.00")
    assert await _shown(store, a.id) == {
        1: ("Jeans 501", 7, price, "open"), 2: ("Jacket", None, price, "open"),
    }  # fmt: skip
    assert await _shown(store, b.id) == {
        1: ("Jeans 501", 7, price, "open"), 3: ("Shirt", None, price, "open"),
    }  # fmt: skip
    assert (await _shown(store, other_site.id))[1][:2] == ("Hose", None)


async def test_the_newest_sighting_describes_and_each_monitor_keeps_its_own_price(
    store: Store,
) -> None:
    a = await new_monitor(store, url=FR + "?brand_ids[]=10")
    b = await new_monitor(store, url=FR + "?search_text=levis")
    await _poll(store, a.id, [_seen(1, "Jeans")], 0)
    # b sees it later, renamed and cheaper: the site's description follows; a's price is
    # what a last saw (its next poll decides a drop from it), b's its own.
    await _poll(store, b.id, [_seen(1, "Jeans 501 W32", price=Decimal("15.00"))], 5)
    # a poll that looked earlier but is recorded later changes nothing of the description.
    await _poll(store, a.id, [_seen(1, "Jeans (old title)", seller_id=9)], 2)
    assert await _shown(store, a.id) == {1: ("Jeans 501 W32", None, Decimal("20.00"), "open")}
    assert await _shown(store, b.id) == {1: ("Jeans 501 W32", None, Decimal("15.00"), "open")}


async def test_a_deleted_monitor_leaves_the_sites_descriptions(store: Store) -> None:
    a = await new_monitor(store, url=FR)
    await _poll(store, a.id, [_seen(1, "Jeans"), _seen(2, "Coat")], 0)
    assert await store.monitors.delete(a.id, a.workspace_id)
    assert await _rows(store, "SELECT count(*) FROM monitor_listings") == [(0,)]
    assert await _rows(store, "SELECT count(*) FROM listings") == [(0,)]
    # Market data, as the price book: it names no workspace and serves the next monitor.
    assert await _rows(store, "SELECT count(*) FROM site_listings") == [(2,)]
    b = await new_monitor(store, url=FR)
    await _poll(store, b.id, [_seen(1, "Jeans")], 1)
    assert (await _shown(store, b.id))[1][0] == "Jeans"


async def test_concurrent_polls_of_overlapping_searches_all_land(store: Store) -> None:
    """Eight monitors of one site record polls of the same 300 listings at once (PostgreSQL:
    concurrent transactions upserting the same rows): none fails, one description each."""
    monitors = [await new_monitor(store, url=f"{FR}?page_size={i}") for i in range(8)]
    ids = list(range(1, 301))

    async def polls(k: int, monitor_id: str) -> None:
        for minute in range(3):
            mine = [
                _seen(i, f"Item {i} at {minute}")
                for i in ids[k * 20 :] + ids[: k * 20]  # each feed in its own order
            ]
            await _poll(store, monitor_id, mine, minute)

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            for k, monitor in enumerate(monitors):
                nursery.start_soon(polls, k, monitor.id)
    assert await _rows(store, "SELECT count(*), min(title), max(title) FROM site_listings") == [
        (300, "Item 1 at 2", "Item 99 at 2")
    ]
    assert await _rows(store, "SELECT count(*) FROM listings") == [(2400,)]
