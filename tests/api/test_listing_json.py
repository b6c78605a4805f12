"""The listings page the database writes as JSON (`store/monitors/listing_json.py`) is what
the API writes from the records (`listing_out` through `api_json`), value for value and type
for type, on awkward values, on both databases; a page SQLite cannot write safely comes as
records."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson
from sqlalchemy import text

from api.http.json_encoding import api_json
from api.monitors.actions import listing_out
from store import EncodedListingPage, ListingPage, ObservedListing, Store
from tests.conftest import new_monitor
from tests.store.test_site_listings import FR, _poll, _seen

AWKWARD = [
    _seen(1, 'Jean "501" \\ W32\nL34\t\x01 é 漢字 😀', Decimal("19.99"), size="W32"),
    _seen(2, "", Decimal("0.10"), listed_at=datetime(2026, 11, 1, 9, 30, tzinfo=UTC)),
    _seen(3, "Jacket", Decimal("12345678.90"), promoted=True, favourites=0, views=2**31 - 1),
    ObservedListing(2**53 + 1, title="Big id", total_price=Decimal("21.04")),  # no brand
    _seen(5, "Sold", Decimal("7"), listed_at=datetime(2026, 11, 2, 9, 30, 0, 1, tzinfo=UTC)),
]


async def _both(store: Store, monitor_id: str, page: int = 1) -> tuple[Any, Any, Any]:
    """(the database's JSON, parsed; the records' JSON, parsed; what the store answered)."""
    records = await store.monitors.listings(monitor_id, None, page, 50)
    encoded = await store.monitors.encoded_listings(monitor_id, None, page, 50)
    assert isinstance(records, ListingPage) and encoded is not None
    written = api_json([listing_out(listing) for listing in records.listings])
    if isinstance(encoded, EncodedListingPage):
        assert encoded.total == records.total
        return orjson.loads(encoded.listings_json), orjson.loads(written), encoded
    again = api_json([listing_out(listing) for listing in encoded.listings])
    return orjson.loads(again), orjson.loads(written), encoded


async def test_the_database_writes_what_the_api_writes(store: Store) -> None:
    monitor = await new_monitor(store, url=FR)
    await _poll(store, monitor.id, AWKWARD, 0)
    # Item 5 sold by absence (likely), item 3 by the detail's word; item 2 in no feed now.
    await store.unit(lambda db: db.execute(text(
        "UPDATE monitor_listings SET state = 'sold', state_evidence = 'absence', in_feed = false "
        "WHERE item_id = 5"
    )))  # fmt: skip
    await store.unit(lambda db: db.execute(text(
        "UPDATE monitor_listings SET state = 'sold', state_evidence = 'detail_api' "
        "WHERE item_id = 3"
    )))  # fmt: skip
    from_database, from_records, answered = await _both(store, monitor.id)
    assert from_database == from_records
    assert [x["likely"] for x in from_records] == [False, False, False, True, False]
    assert from_records[0]["price"] == "19.99" and from_records[1]["listed_at"].endswith(":00Z")
    assert isinstance(answered, EncodedListingPage)  # really written by the database
    # The keys in the records' order, `likely` last: the answer reads the same.
    assert list(orjson.loads(answered.listings_json)[0]) == list(from_records[0])


async def test_past_the_end_and_an_empty_page_are_empty_arrays(store: Store) -> None:
    monitor = await new_monitor(store, url=FR)
    assert (await _both(store, monitor.id))[:2] == ([], [])
    await _poll(store, monitor.id, AWKWARD[:2], 0)
    assert (await _both(store, monitor.id, page=9))[:2] == ([], [])


async def test_a_page_with_a_datetime_in_another_form_comes_as_records(store: Store) -> None:
    monitor = await new_monitor(store, url=FR)
    await _poll(store, monitor.id, AWKWARD[:2], 0)
    if store.dialect == "sqlite":  # as a hand-written row or CURRENT_TIMESTAMP stores it
        await store.unit(lambda db: db.execute(text(
            "UPDATE monitor_listings SET first_seen_at = '2026-11-01 10:00:00' WHERE item_id = 2"
        )))  # fmt: skip
    from_database, from_records, answered = await _both(store, monitor.id)
    # PostgreSQL's datetimes are typed: it always writes the page.
    expected = ListingPage if store.dialect == "sqlite" else EncodedListingPage
    assert isinstance(answered, expected)
    assert from_database == from_records
