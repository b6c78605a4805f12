"""Monitor repository. Every function takes an open `Session` (the caller's transaction).

Workspace scoping: every function a request can reach takes `workspace_id` and filters on it,
so another workspace's monitor is simply not found.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import InstrumentedAttribute, Session

from .._db.rows import new_row, to_record, workspace_row
from ..accounts.quotas import hold_workspace, refuse_past
from ..market.site_listings import drop_unheld
from ..notify.holds import hold_for_monitor_deletion
from .models import Listing, ListingEvent, Monitor, MonitorListing, Poll
from .polls import IN_CHUNK, poll_record
from .records import (
    LISTING_STATES,
    FeedOrder,
    ListingEventRecord,
    ListingRecord,
    LiveListing,
    MonitorRecord,
    MonitorStatus,
    NewMonitor,
    PollRecord,
)

# Listings deleted per statement when their monitor is (with their descriptions' versions).
DELETE_CHUNK = 5000


def monitor_record(row: Monitor) -> MonitorRecord:
    return to_record(MonitorRecord, row)


def listing_record(row: Listing) -> ListingRecord:
    return to_record(ListingRecord, row)


def event_record(row: ListingEvent) -> ListingEventRecord:
    return to_record(ListingEventRecord, row)


def create_monitor(
    db: Session, new: NewMonitor, now: datetime, *, at_most: int | None = None
) -> MonitorRecord:
    """A new monitor, `paused` until its bootstrap. With `at_most`: `QuotaFull` (nothing
    written) when the workspace already has that many monitors holding a slot, counted under
    its quota lock (`store/accounts/quotas.py`), so simultaneous starts cannot all pass."""
    if at_most is not None:
        hold_workspace(db, new.workspace_id)
        refuse_past("active_monitors", at_most, count_active(db, new.workspace_id))
    monitor = new_row(
        Monitor,
        new,
        "monitor_id",
        status="paused",
        created_at=now,
        next_poll_at=now,
        consecutive_errors=0,
        total_errors=0,
        polls=0,
    )
    db.add(monitor)
    db.flush()
    return monitor_record(monitor)


def get_monitor(db: Session, monitor_id: str, workspace_id: str | None) -> MonitorRecord | None:
    """The monitor, or None; with `workspace_id`, only if it belongs to that workspace."""
    monitor = workspace_row(db, Monitor, monitor_id, workspace_id)
    return None if monitor is None else monitor_record(monitor)


def list_monitors(db: Session, workspace_id: str) -> list[MonitorRecord]:
    rows = db.scalars(
        select(Monitor)
        .where(Monitor.workspace_id == workspace_id)
        .order_by(Monitor.created_at.desc(), Monitor.id)
    )
    return [monitor_record(m) for m in rows]


def count_active(db: Session, workspace_id: str) -> int:
    """Monitors that poll (the plan's quota): active ones, those in error (they keep
    retrying) and those still bootstrapping."""
    return int(
        db.scalar(
            select(func.count())
            .select_from(Monitor)
            .where(
                Monitor.workspace_id == workspace_id,
                Monitor.status.in_(("active", "error"))
                | ((Monitor.status == "paused") & Monitor.bootstrapped_at.is_(None)),
            )
        )
        or 0
    )


def monitors_to_resume(db: Session) -> list[MonitorRecord]:
    """Monitors a restarted process must run again: active ones, those in error (they keep
    retrying), and paused ones whose bootstrap never finished (a pause by the user after
    bootstrap stays paused)."""
    rows = db.scalars(
        select(Monitor)
        .where(
            Monitor.status.in_(("active", "error"))
            | ((Monitor.status == "paused") & Monitor.bootstrapped_at.is_(None))
        )
        .order_by(Monitor.created_at)
    )
    return [monitor_record(m) for m in rows]


def claim_slot(db: Session, monitor_id: str, workspace_id: str, at_most: int) -> None:
    """Make a paused monitor `active` if the workspace has fewer than `at_most` monitors holding
    a slot, counted under its quota lock; `QuotaFull` (nothing written) otherwise. What
    resuming it takes before its actor is told: the actor's own write would come in another
    transaction, after the count. A monitor that holds a slot already (active, in error,
    still bootstrapping), or is gone, is left as it is."""
    hold_workspace(db, workspace_id)
    row = workspace_row(db, Monitor, monitor_id, workspace_id)
    if row is None or row.status != "paused" or row.bootstrapped_at is None:
        return
    refuse_past("active_monitors", at_most, count_active(db, workspace_id))
    row.status = "active"
    db.flush()


def set_status(
    db: Session, monitor_id: str, status: MonitorStatus, *, reset_errors: bool = False
) -> None:
    values: dict[str, Any] = {"status": status}
    if reset_errors:
        values.update(consecutive_errors=0, last_error=None, last_error_kind=None)
    db.execute(update(Monitor).where(Monitor.id == monitor_id).values(**values))


def delete_monitor(db: Session, monitor_id: str, workspace_id: str) -> bool:
    # Children first: SQLite only cascades when foreign keys are on, and we do not rely on it.
    # Locked first: a poll being written meanwhile (cluster mode: on another node) either
    # commits before this delete or finds the row gone at its fence.
    owned = db.scalar(
        select(Monitor.id)
        .where(Monitor.id == monitor_id, Monitor.workspace_id == workspace_id)
        .with_for_update()
    )
    if owned is None:
        return False
    db.execute(delete(ListingEvent).where(ListingEvent.monitor_id == monitor_id))
    _delete_listings(db, monitor_id)
    db.execute(delete(Poll).where(Poll.monitor_id == monitor_id))
    hold_for_monitor_deletion(db, monitor_id)  # its rules and alerts go by cascade
    db.execute(delete(Monitor).where(Monitor.id == monitor_id))
    return True


def _delete_listings(db: Session, monitor_id: str) -> None:
    """The monitor's listings, `DELETE_CHUNK` at a time, each chunk with the versions of its
    descriptions that no other monitor holds (a monitor holds one version per listing, so
    a chunk's versions are free of it once the chunk is gone): memory stays a chunk's, however
    many listings the monitor had."""
    while True:
        chunk = (
            select(MonitorListing.item_id)
            .where(MonitorListing.monitor_id == monitor_id)
            .order_by(MonitorListing.item_id)
            .limit(DELETE_CHUNK)
            .correlate(None)  # its own FROM, not the DELETE's (the same table)
        )
        gone = delete(MonitorListing).where(
            MonitorListing.monitor_id == monitor_id, MonitorListing.item_id.in_(chunk)
        )
        held = db.scalars(
            gone.returning(MonitorListing.description_id),
            execution_options={"synchronize_session": False},
        ).all()
        if not held:
            return
        drop_unheld(db, held)


def known_live_listings(db: Session, monitor_id: str) -> set[int]:
    """Ids of listings last known open or reserved: the ones a poll must account for."""
    rows = db.scalars(
        select(MonitorListing.item_id).where(
            MonitorListing.monitor_id == monitor_id,
            MonitorListing.state.in_(("open", "reserved")),
        )
    )
    return set(rows)


def feed_order(db: Session, monitor_id: str, item_ids: Iterable[int]) -> FeedOrder:
    """The monitor's live listings, and the ranks of those and of `item_ids` (a feed's
    listings), with the monitor's lowest and highest rank: see `FeedOrder`."""
    mine = MonitorListing
    rows = db.execute(
        select(mine.item_id, mine.last_seen_at, mine.feed_rank, mine.category_id)
        .where(mine.monitor_id == monitor_id, mine.state.in_(("open", "reserved")))
    )  # fmt: skip
    live = {int(i): LiveListing(int(i), seen, rank, cat) for i, seen, rank, cat in rows}
    ranks = {i: x.feed_rank for i, x in live.items() if x.feed_rank is not None}
    others = sorted(set(item_ids) - live.keys())
    for start in range(0, len(others), IN_CHUNK):
        found = db.execute(
            select(MonitorListing.item_id, MonitorListing.feed_rank).where(
                MonitorListing.monitor_id == monitor_id,
                MonitorListing.item_id.in_(others[start : start + IN_CHUNK]),
                MonitorListing.feed_rank.is_not(None),
            )
        )
        ranks.update((int(i), int(rank)) for i, rank in found if rank is not None)
    lowest, highest = db.execute(
        select(func.min(MonitorListing.feed_rank), func.max(MonitorListing.feed_rank)).where(
            MonitorListing.monitor_id == monitor_id
        )
    ).one()
    return FeedOrder(live, ranks, lowest, highest)


def last_good_poll(db: Session, monitor_id: str) -> PollRecord | None:
    """The latest successful poll; None before any."""
    row = db.scalar(
        select(Poll)
        .where(Poll.monitor_id == monitor_id, Poll.error.is_(None))
        .order_by(Poll.started_at.desc(), Poll.id.desc())
        .limit(1)
    )
    return None if row is None else poll_record(row)


def state_counts(db: Session, monitor_id: str) -> dict[str, int]:
    """Listings per state, as `record_poll` keeps them on the monitor row."""
    monitor = db.get(Monitor, monitor_id)
    if monitor is None:
        return {state: 0 for state in LISTING_STATES}
    return {state: int(getattr(monitor, f"{state}_count")) for state in LISTING_STATES}


def listing_counts(db: Session, monitor_id: str) -> dict[str, int]:
    """`state_counts` plus `likely_sold`: of the sold, those sold by absence (likely sales,
    not confirmed by any source). The four states still add up to every listing."""
    monitor = db.get(Monitor, monitor_id)
    counts = {state: 0 for state in LISTING_STATES} | {"likely_sold": 0}
    if monitor is not None:
        for state in LISTING_STATES:
            counts[state] = int(getattr(monitor, f"{state}_count"))
        counts["likely_sold"] = int(monitor.likely_sold_count)
    return counts


def listings_after(
    db: Session, monitor_id: str, after_item_id: int | None, limit: int
) -> list[ListingRecord]:
    """Keyset page of listings (for streaming exports: constant cost per page)."""
    rows = _after(db, Listing, Listing.item_id, monitor_id, after_item_id, limit)
    return [listing_record(r) for r in rows]


def events_after(
    db: Session, monitor_id: str, after_id: int | None, limit: int
) -> list[ListingEventRecord]:
    rows = _after(db, ListingEvent, ListingEvent.id, monitor_id, after_id, limit)
    return [event_record(r) for r in rows]


def _after(
    db: Session,
    model: type[Listing] | type[ListingEvent],
    key: InstrumentedAttribute[int],
    monitor_id: str,
    after: int | None,
    limit: int,
) -> list[Any]:
    """Keyset page of the monitor's rows of `model`: the first `limit` with `key` past
    `after` (from the start when None), in `key` order."""
    query = select(model).where(model.monitor_id == monitor_id)
    if after is not None:
        query = query.where(key > after)
    return list(db.scalars(query.order_by(key).limit(limit)))


def polls_after(
    db: Session, monitor_id: str, after: tuple[datetime, str] | None, limit: int
) -> list[PollRecord]:
    query = select(Poll).where(Poll.monitor_id == monitor_id)
    if after is not None:
        started, poll_id = after
        query = query.where(
            (Poll.started_at > started) | ((Poll.started_at == started) & (Poll.id > poll_id))
        )
    rows = db.scalars(query.order_by(Poll.started_at, Poll.id).limit(limit))
    return [poll_record(r) for r in rows]
