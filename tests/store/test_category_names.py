"""A monitor's listings keep their category names, on both databases: a later poll fills a
missing name and never replaces a stored one while the listing stays in its category."""

from __future__ import annotations

from store import ConfirmedState, ObservedListing, Store
from tests.store.test_store_evidence import Polls, _monitor

JEANS, COATS = "Women › Clothing › Jeans", "Women › Clothing › Coats"


async def _names(store: Store, monitor_id: str) -> dict[int, tuple[int | None, str | None]]:
    return {
        x.item_id: (x.category_id, x.category_name)
        async for x in store.monitors.iter_listings(monitor_id)
    }


async def test_a_later_poll_fills_a_missing_name_and_keeps_a_stored_one(store: Store) -> None:
    monitor_id, _ = await _monitor(store)
    poll = Polls(store, monitor_id)
    await poll([ObservedListing(1, category_id=1904), ObservedListing(2, category_id=1904),
                ObservedListing(3, category_id=1904)])  # fmt: skip
    await poll(
        [ObservedListing(1, category_id=1904, category_name=JEANS),  # the feed learned it
         ObservedListing(2, category_id=1904)],
        confirmed=[ConfirmedState(3, "sold", "item_page", category_name="Women › Jeans › Slim")],
    )  # fmt: skip
    assert await _names(store, monitor_id) == {
        1: (1904, JEANS), 2: (1904, None), 3: (1904, "Women › Jeans › Slim"),
    }  # fmt: skip
    await poll([ObservedListing(1, category_id=1904, category_name="Jeans (renamed)"),
                ObservedListing(2, category_id=1904, category_name=JEANS),
                ObservedListing(3, category_id=1904, category_name=JEANS)])  # fmt: skip
    assert await _names(store, monitor_id) == {
        1: (1904, JEANS), 2: (1904, JEANS), 3: (1904, "Women › Jeans › Slim"),
    }  # fmt: skip
    # A listing moved to another category (legacy items say theirs) takes that one's name.
    await poll([ObservedListing(1, category_id=1206, category_name=COATS)])
    assert (await _names(store, monitor_id))[1] == (1206, COATS)
