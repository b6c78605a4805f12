"""A page read once is answered again from memory until the monitor's next poll, with one
small read (the monitor's counters) instead of two; a poll makes it read afresh (both
databases)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from engine import decide_poll
from store import ObservedListing, Store
from store._db import driver_reads
from tests.store.test_store_monitors import _monitor, _outcome


class Statements:
    """Statements sent to the database: SQLAlchemy's, which its events see, and the driver
    reads' (`store/_db/driver_reads.py`), which go to a cursor of the driver's own."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        event.listen(store._engine, "before_cursor_execute", self._seen)
        execute = driver_reads._execute

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._seen()
            return execute(*args, **kwargs)

        monkeypatch.setattr(driver_reads, "_execute", counted)

    def _seen(self, *_args: Any) -> None:
        self.count += 1

    def since(self, before: int) -> int:
        return self.count - before


async def test_a_page_is_read_once_per_poll(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monitor_id, workspace_id = await _monitor(store)
    seen = [ObservedListing(item_id=i, price=None) for i in range(1, 26)]
    await store.monitors.record_poll(monitor_id, _outcome(store, seen, []), decide=decide_poll)
    statements = Statements(store, monkeypatch)

    before = statements.count
    first = await store.monitors.listings(monitor_id, None, 2, 10, workspace_id=workspace_id)
    assert statements.since(before) == 2  # the counters, then the page
    before = statements.count
    again = await store.monitors.listings(monitor_id, None, 2, 10, workspace_id=workspace_id)
    assert statements.since(before) == 1  # the counters only
    assert again == first and [x.item_id for x in again.listings] == list(range(11, 21))

    # Another workspace asking for the cached page still gets nothing.
    _, stranger = await _monitor(store)
    assert await store.monitors.listings(monitor_id, None, 2, 10, workspace_id=stranger) is None

    # A poll (a price, a new listing) is seen on the very next read.
    changed = [ObservedListing(item_id=11, price=None, title="now titled")]
    changed.append(ObservedListing(item_id=12, price=None))
    await store.monitors.record_poll(
        monitor_id,
        _outcome(store, [*changed, ObservedListing(item_id=26, price=None)], [], minutes=1),
        decide=decide_poll,
    )
    after = await store.monitors.listings(monitor_id, None, 2, 10, workspace_id=workspace_id)
    assert after is not None and after.total == 26
    assert after.listings[0].title == "now titled"

    # A deleted monitor is gone, cached pages or not.
    assert await store.monitors.delete(monitor_id, workspace_id)
    assert await store.monitors.listings(monitor_id, None, 2, 10, workspace_id=workspace_id) is None
