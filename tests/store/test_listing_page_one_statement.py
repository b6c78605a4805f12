"""On PostgreSQL a listings page not read before is one statement, the monitor's counters
and the page's JSON together (`listing_pages._head_and_page`), seeking from the bookmarks
known; it answers what the two-statement read answers, deep pages, stale bookmarks, the end
and another workspace included (both databases: SQLite keeps two statements)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from api.http.json_encoding import api_json
from api.monitors.actions import listing_out
from engine import decide_poll
from store import EncodedListingPage, ListingPage, ObservedListing, Store
from store.monitors.listing_pages import BOOKMARK_EVERY
from tests.store.test_listing_page_cache import Statements
from tests.store.test_store_monitors import _monitor, _outcome

LISTINGS = 2 * BOOKMARK_EVERY + 300
SIZE = 50


async def _pages_agree(store: Store, monitor_id: str, workspace_id: str, page: int) -> Any:
    """The encoded page (the glance, one statement on PostgreSQL) against the records page
    of the same monitor, written as the API writes records; the encoded page's total."""
    encoded = await store.monitors.encoded_listings(
        monitor_id, None, page, SIZE, workspace_id=workspace_id
    )
    records = await store.monitors.listings(monitor_id, None, page, SIZE, workspace_id=workspace_id)
    assert isinstance(encoded, EncodedListingPage) and isinstance(records, ListingPage)
    assert encoded.total == records.total
    written = orjson.loads(api_json([listing_out(x) for x in records.listings]))
    assert orjson.loads(encoded.listings_json) == written
    return [x["item_id"] for x in written], encoded.total


async def test_first_reads_answer_as_two_statements_would(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monitor_id, workspace_id = await _monitor(store)
    seen = [ObservedListing(item_id=i, price=None) for i in range(11, LISTINGS + 11)]
    await store.monitors.record_poll(monitor_id, _outcome(store, seen, []), decide=decide_poll)
    statements = Statements(store, monkeypatch)
    postgres = store.dialect == "postgresql"

    before = statements.count
    first = await store.monitors.encoded_listings(
        monitor_id, None, 3, SIZE, workspace_id=workspace_id
    )
    assert isinstance(first, EncodedListingPage)
    assert statements.since(before) == (1 if postgres else 2)

    # Deep: its bookmarks are built once (a walk), then every deep page seeks from them.
    for page in (25, 41, LISTINGS // SIZE):
        ids, total = await _pages_agree(store, monitor_id, workspace_id, page)
        assert ids == list(range((page - 1) * SIZE + 11, page * SIZE + 11)) and total == LISTINGS
    before = statements.count
    await store.monitors.encoded_listings(monitor_id, None, 30, SIZE, workspace_id=workspace_id)
    assert statements.since(before) == (1 if postgres else 2)

    # Past the end: empty, with the total.
    assert await _pages_agree(store, monitor_id, workspace_id, LISTINGS // SIZE + 3) == (
        [],
        LISTINGS,
    )

    # A poll brings item 5, which moves every listing one place on: the bookmarks known are
    # of the version before, so the deep page is read from new ones, never the stale ones.
    moved = [ObservedListing(item_id=5, price=None), *seen]
    await store.monitors.record_poll(
        monitor_id, _outcome(store, moved, [], minutes=1), decide=decide_poll
    )
    ids, total = await _pages_agree(store, monitor_id, workspace_id, 31)  # not read before
    assert total == LISTINGS + 1 and ids == list(range(30 * SIZE + 10, 31 * SIZE + 10))

    # Another workspace gets nothing, shallow or deep.
    _, stranger = await _monitor(store)
    for page in (1, 30):
        answer = await store.monitors.encoded_listings(
            monitor_id, None, page, SIZE, workspace_id=stranger
        )
        assert answer is None
