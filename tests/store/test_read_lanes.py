"""SQLite has one writer, and a writer waiting for its lock waits in its lane: with every
general lane taken (a long write, polls queued behind it), the reads requests make most (a
listings page, the dashboard, a run, the health check) still answer, in lanes of their own."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import trio
from sqlalchemy import text
from sqlalchemy.orm import Session

from engine import decide_poll
from store import ObservedListing, Store
from store._db.unit import SQLITE_LANES
from tests.store.test_store_monitors import _monitor, _outcome
from tests.store.test_unit_cancellation import _checked_out, _until


# SQLite alone: PostgreSQL's reads share its lanes.
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_the_hottest_reads_answer_while_every_general_lane_is_taken(store: Store) -> None:
    monitor_id, workspace_id = await _monitor(store)
    seen = [ObservedListing(item_id=i, price=None) for i in range(1, 6)]
    await store.monitors.record_poll(monitor_id, _outcome(store, seen, []), decide=decide_poll)

    release = threading.Event()
    entered = [threading.Event() for _ in range(SQLITE_LANES.units)]

    def hold(lane: int) -> Callable[[Session], None]:
        """The first lane writes and keeps SQLite's write lock until released; the others
        queue behind it for the lock, in their threads, as polls behind a long delete do."""

        def work(db: Session) -> None:
            db.connection()
            if lane == 0:
                db.execute(text("UPDATE monitors SET label = label"))
                entered[lane].set()
                release.wait(60)
            else:
                entered[lane].set()
                db.execute(text("UPDATE monitors SET label = label"))

        return work

    async with trio.open_nursery() as nursery:
        # Released whatever happens: a failed check must not leave the holders' threads
        # waiting (a nursery waits for its tasks, and a thread cannot be cancelled).
        try:
            for lane in range(SQLITE_LANES.units):  # in turn: the writer holds the lock first
                nursery.start_soon(store.unit, hold(lane))
                await _until(entered[lane])
            assert _checked_out(store) == SQLITE_LANES.units

            # Every general lane is taken: another unit waits (whatever the machine's load).
            with trio.move_on_after(0.2) as waited:
                await store.unit(lambda db: None)
            assert waited.cancelled_caught

            with trio.fail_after(30):
                page = await store.monitors.listings(
                    monitor_id, None, 1, 10, workspace_id=workspace_id
                )
                view = await store.runs.dashboard(
                    workspace_id, analysis_id=None, floor=None, recent_runs=5
                )
                await store.ping()
            assert page is not None and [x.item_id for x in page.listings] == [1, 2, 3, 4, 5]
            assert view.recent_runs == []
        finally:
            release.set()
