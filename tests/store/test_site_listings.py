"""A listing's description is stored once per site and version, however many monitors see
it (#31), on both databases: each monitor keeps its own side (when it saw the listing, its
state, the price it last saw) and shows the version it saw itself."""

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
    await _poll(store, b.id, [_seen(1, "Jeans 501", seller_id=7), _seen(3, "Shirt")], 1)
    await _poll(store, other_site.id, [_seen(1, "Hose")], 1)
    described = await _rows(store, "SELECT site, item_id, title FROM site_listings ORDER BY 1, 2")
    assert described == [
        ("https://www.vinted.de", 1, "Hose"),
        ("https://www.vinted.fr", 1, "Jeans 501"),  # once, for a and b
        ("https://www.vinted.fr", 2, "Jacket"),
        ("https://www.vinted.fr", 3, "Shirt"),
    ]
    assert (await _rows(store, "SELECT count(*) FROM monitor_listings"))[0][0] == 5
    price = Decimal("20.00")
    assert await _shown(store, a.id) == {
        1: ("Jeans 501", 7, price, "open"), 2: ("Jacket", None, price, "open"),
    }  # fmt: skip
    assert await _shown(store, b.id) == {
        1: ("Jeans 501", 7, price, "open"), 3: ("Shirt", None, price, "open"),
    }  # fmt: skip
    assert (await _shown(store, other_site.id))[1][:2] == ("Hose", None)


async def test_each_monitor_shows_what_it_saw_itself(store: Store) -> None:
    """As a lone monitor of its search would: never what another workspace's monitor saw
    since (a rename it has not seen would betray that someone else watches the listing)."""
    a = await new_monitor(store, url=FR + "?brand_ids[]=10")
    b = await new_monitor(store, url=FR + "?search_text=levis")
    await _poll(store, a.id, [_seen(1, "Jeans", seller_id=7)], 0)
    # b sees it later, renamed and cheaper, its feed without the seller: a new version.
    await _poll(store, b.id, [_seen(1, "Jeans 501 W32", price=Decimal("15.00"))], 5)
    assert await _shown(store, a.id) == {1: ("Jeans", 7, Decimal("20.00"), "open")}
    assert await _shown(store, b.id) == {1: ("Jeans 501 W32", None, Decimal("15.00"), "open")}
    # a sees the rename too, its feed still without the seller: what a knew stays (a third
    # version, as a lone monitor of a's search would show it).
    await _poll(store, a.id, [_seen(1, "Jeans 501 W32")], 6)
    assert await _shown(store, a.id) == {1: ("Jeans 501 W32", 7, Decimal("20.00"), "open")}
    # a's first version is held by no monitor any longer: dropped (b's and a's new one stay).
    assert await _rows(store, "SELECT count(*) FROM site_listings") == [(2,)]
    # b's next sighting matches the version a holds now: no new row, b points at it (and
    # the version b moved on from goes).
    await _poll(store, b.id, [_seen(1, "Jeans 501 W32", seller_id=7)], 7)
    assert await _rows(store, "SELECT count(*) FROM site_listings") == [(1,)]
    assert await _rows(store, "SELECT count(DISTINCT description_id) FROM monitor_listings") == [
        (1,)
    ]


async def test_a_deleted_monitor_takes_the_descriptions_nobody_else_holds(store: Store) -> None:
    a = await new_monitor(store, url=FR)
    await _poll(store, a.id, [_seen(1, "Jeans"), _seen(2, "Coat")], 0)
    assert await store.monitors.delete(a.id, a.workspace_id)
    assert await _rows(store, "SELECT count(*) FROM monitor_listings") == [(0,)]
    assert await _rows(store, "SELECT count(*) FROM listings") == [(0,)]
    # Read by nothing once no monitor holds them (tests/store/test_unheld_versions.py).
    assert await _rows(store, "SELECT count(*) FROM site_listings") == [(0,)]
    b = await new_monitor(store, url=FR)
    await _poll(store, b.id, [_seen(1, "Jeans")], 1)
    assert (await _shown(store, b.id))[1][0] == "Jeans"


async def test_concurrent_polls_of_overlapping_searches_all_land(store: Store) -> None:
    """Eight monitors of one site record polls of the same 300 listings at once (PostgreSQL:
    concurrent transactions inserting the same versions, and dropping those they all moved
    on from while others take them up): none fails, each version of a listing is stored
    once (three each: the titles change every minute), and only the last stays."""
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
    assert await _rows(store, "SELECT count(*) FROM site_listings") == [(300,)]
    assert await _rows(
        store, "SELECT count(DISTINCT title) FROM site_listings WHERE title LIKE '% at 2'"
    ) == [(300,)]
    assert await _rows(store, "SELECT count(*), min(title), max(title) FROM listings") == [
        (2400, "Item 1 at 2", "Item 99 at 2")
    ]
