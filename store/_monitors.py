"""Monitor repository. Every function takes an open `AsyncSession` (the caller's transaction).

Workspace scoping: every function a request can reach takes `workspace_id` and filters on it,
so another workspace's monitor is simply not found.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ._fence import fence
from ._monitor_models import Listing, ListingEvent, Monitor, Poll
from ._monitor_records import (
    LISTING_STATES,
    ListingEventRecord,
    ListingRecord,
    MonitorRecord,
    MonitorStatus,
    PollOutcome,
    PollRecord,
)
from ._rows import to_record

_IN_CHUNK = 500  # bound on IN (...) lists: SQLite caps bound parameters per statement


def monitor_record(row: Monitor) -> MonitorRecord:
    return to_record(MonitorRecord, row)


def listing_record(row: Listing) -> ListingRecord:
    return to_record(ListingRecord, row)


def event_record(row: ListingEvent) -> ListingEventRecord:
    return to_record(ListingEventRecord, row)


def poll_record(row: Poll) -> PollRecord:
    return to_record(PollRecord, row)


async def create_monitor(db: AsyncSession, **fields: Any) -> MonitorRecord:
    monitor = Monitor(consecutive_errors=0, total_errors=0, polls=0, **fields)
    db.add(monitor)
    await db.flush()
    return monitor_record(monitor)


async def get_monitor(
    db: AsyncSession, monitor_id: str, workspace_id: str | None
) -> MonitorRecord | None:
    """The monitor, or None; with `workspace_id`, only if it belongs to that workspace."""
    query = select(Monitor).where(Monitor.id == monitor_id)
    if workspace_id is not None:
        query = query.where(Monitor.workspace_id == workspace_id)
    monitor = await db.scalar(query)
    return None if monitor is None else monitor_record(monitor)


async def list_monitors(db: AsyncSession, workspace_id: str) -> list[MonitorRecord]:
    rows = await db.scalars(
        select(Monitor)
        .where(Monitor.workspace_id == workspace_id)
        .order_by(Monitor.created_at.desc(), Monitor.id)
    )
    return [monitor_record(m) for m in rows]


async def count_active(db: AsyncSession, workspace_id: str) -> int:
    """Monitors that poll: active ones and those still bootstrapping (the plan's quota)."""
    return int(
        await db.scalar(
            select(func.count())
            .select_from(Monitor)
            .where(
                Monitor.workspace_id == workspace_id,
                (Monitor.status == "active")
                | ((Monitor.status == "paused") & Monitor.bootstrapped_at.is_(None)),
            )
        )
        or 0
    )


async def monitors_to_resume(db: AsyncSession) -> list[MonitorRecord]:
    """Monitors a restarted process must run again: active ones, and paused ones whose
    bootstrap never finished (a pause by the user after bootstrap stays paused)."""
    rows = await db.scalars(
        select(Monitor)
        .where(
            (Monitor.status == "active")
            | ((Monitor.status == "paused") & Monitor.bootstrapped_at.is_(None))
        )
        .order_by(Monitor.created_at)
    )
    return [monitor_record(m) for m in rows]


async def set_status(
    db: AsyncSession, monitor_id: str, status: MonitorStatus, *, reset_errors: bool = False
) -> None:
    values: dict[str, Any] = {"status": status}
    if reset_errors:
        values.update(consecutive_errors=0, last_error=None)
    await db.execute(update(Monitor).where(Monitor.id == monitor_id).values(**values))


async def delete_monitor(db: AsyncSession, monitor_id: str, workspace_id: str) -> bool:
    # Children first: SQLite only cascades when foreign keys are on, and we do not rely on it.
    # Locked first: a poll being written meanwhile (cluster mode: on another node) either
    # commits before this delete or finds the row gone at its fence.
    owned = await db.scalar(
        select(Monitor.id)
        .where(Monitor.id == monitor_id, Monitor.workspace_id == workspace_id)
        .with_for_update()
    )
    if owned is None:
        return False
    for table in (ListingEvent, Listing, Poll):
        await db.execute(delete(table).where(table.monitor_id == monitor_id))
    await db.execute(delete(Monitor).where(Monitor.id == monitor_id))
    return True


async def known_live_listings(db: AsyncSession, monitor_id: str) -> set[int]:
    """Ids of listings last known open or reserved: the ones a poll must account for."""
    rows = await db.scalars(
        select(Listing.item_id).where(
            Listing.monitor_id == monitor_id, Listing.state.in_(("open", "reserved"))
        )
    )
    return set(rows)


async def _existing(db: AsyncSession, monitor_id: str, ids: Sequence[int]) -> dict[int, Listing]:
    found: dict[int, Listing] = {}
    for start in range(0, len(ids), _IN_CHUNK):
        chunk = ids[start : start + _IN_CHUNK]
        rows = await db.scalars(
            select(Listing).where(Listing.monitor_id == monitor_id, Listing.item_id.in_(chunk))
        )
        found.update((row.item_id, row) for row in rows)
    return found


def _event(
    monitor_id: str, poll_id: str, item_id: int, kind: str, at: datetime, **kw: Any
) -> ListingEvent:
    return ListingEvent(
        monitor_id=monitor_id, item_id=item_id, poll_id=poll_id, kind=kind, at=at, **kw
    )


async def record_poll(
    db: AsyncSession, monitor_id: str, outcome: PollOutcome, lease_token: int | None = None
) -> PollRecord:
    """Apply one poll's observations against the stored state, all or nothing.

    Idempotent: a poll id already recorded is not applied again (a replay after a crash
    between commit and acknowledgement), and changes are computed against what the database
    holds now, so the same observation applied twice yields no second event. With a
    `lease_token` (cluster mode) nothing is written unless the lease is still this poll's:
    `LeaseLost` otherwise.
    """
    if lease_token is not None:
        await fence(db, "monitor", monitor_id, lease_token)
    already = await db.get(Poll, outcome.poll_id)
    if already is not None:
        return poll_record(already)
    at = outcome.finished_at
    ids = sorted({s.item_id for s in outcome.seen} | {c.item_id for c in outcome.confirmed})
    existing = await _existing(db, monitor_id, ids)
    new = changed = 0
    moved: Counter[str] = Counter()  # listings entering (+) and leaving (-) each state
    for seen in outcome.seen:
        row = existing.get(seen.item_id)
        fields = {
            "title": seen.title,
            "brand": seen.brand,
            "size": seen.size,
            "condition": seen.condition,
            "category_id": seen.category_id,
            "price": seen.price,
            "currency": seen.currency,
            "favourites": seen.favourites,
            "views": seen.views,
            "seller_id": seen.seller_id,
            "url": seen.url,
            "photo_url": seen.photo_url,
            "listed_at": seen.listed_at,
        }
        if row is None:
            row = Listing(
                monitor_id=monitor_id,
                item_id=seen.item_id,
                first_seen_at=at,
                last_seen_at=at,
                state="open",
                state_changed_at=at,
                in_feed=True,
                **fields,
            )
            db.add(row)
            existing[seen.item_id] = row
            db.add(
                _event(
                    monitor_id,
                    outcome.poll_id,
                    seen.item_id,
                    "new",
                    at,
                    to_state="open",
                    price=seen.price,
                    favourites=seen.favourites,
                    views=seen.views,
                )
            )
            new += 1
            moved["open"] += 1
            continue
        touched = False
        if seen.price is not None and row.price is not None and seen.price != row.price:
            db.add(_event(monitor_id, outcome.poll_id, seen.item_id, "price", at, price=seen.price))
            touched = True
        if seen.favourites is not None and seen.favourites != row.favourites:
            db.add(
                _event(
                    monitor_id,
                    outcome.poll_id,
                    seen.item_id,
                    "counts",
                    at,
                    favourites=seen.favourites,
                    views=seen.views,
                )
            )
            touched = True
        # Back in the feed means on sale again (a reservation fell through, or it was
        # relisted); a sold listing stays sold.
        if row.state in ("reserved", "deleted"):
            db.add(
                _event(
                    monitor_id,
                    outcome.poll_id,
                    seen.item_id,
                    "state",
                    at,
                    from_state=row.state,
                    to_state="open",
                )
            )
            moved[row.state] -= 1
            moved["open"] += 1
            row.state, row.state_changed_at = "open", at
            touched = True
        for name, value in fields.items():
            if value is not None:
                setattr(row, name, value)
        row.last_seen_at, row.in_feed = at, True
        changed += touched
    for confirmation in outcome.confirmed:
        row = existing.get(confirmation.item_id)
        if row is None:
            continue  # never seen by this monitor: nothing to confirm against
        row.in_feed = False
        if confirmation.state != row.state and row.state != "sold":
            db.add(
                _event(
                    monitor_id,
                    outcome.poll_id,
                    confirmation.item_id,
                    "state",
                    at,
                    from_state=row.state,
                    to_state=confirmation.state,
                )
            )
            moved[row.state] -= 1
            moved[confirmation.state] += 1
            row.state, row.state_changed_at = confirmation.state, at
            changed += 1
    poll = Poll(
        id=outcome.poll_id,
        monitor_id=monitor_id,
        started_at=outcome.started_at,
        finished_at=outcome.finished_at,
        pages=outcome.pages,
        items=len(outcome.seen),
        new=new,
        changed=changed,
        confirmed=len(outcome.confirmed),
        duration_ms=int((outcome.finished_at - outcome.started_at).total_seconds() * 1000),
        error=None,
    )
    db.add(poll)
    monitor = await db.get(Monitor, monitor_id)
    if monitor is not None:
        monitor.last_poll_at = at
        monitor.next_poll_at = outcome.next_poll_at
        monitor.consecutive_errors = 0
        monitor.last_error = None
        monitor.polls += 1
        for state, delta in moved.items():
            setattr(monitor, f"{state}_count", getattr(monitor, f"{state}_count") + delta)
        if monitor.bootstrapped_at is None:
            monitor.bootstrapped_at = at
            if monitor.status == "paused":
                monitor.status = "active"
    await db.flush()
    return poll_record(poll)


async def record_poll_error(
    db: AsyncSession,
    monitor_id: str,
    *,
    poll_id: str,
    started_at: datetime,
    finished_at: datetime,
    error: str,
    next_poll_at: datetime,
    max_consecutive: int,
    lease_token: int | None = None,
) -> MonitorRecord | None:
    """Count a failed poll; after `max_consecutive` in a row the monitor goes to `error`.
    Fenced like `record_poll`."""
    if lease_token is not None:
        await fence(db, "monitor", monitor_id, lease_token)
    monitor = await db.get(Monitor, monitor_id)
    if monitor is None:
        return None
    if await db.get(Poll, poll_id) is None:
        db.add(
            Poll(
                id=poll_id,
                monitor_id=monitor_id,
                started_at=started_at,
                finished_at=finished_at,
                pages=0,
                items=0,
                new=0,
                changed=0,
                confirmed=0,
                duration_ms=int((finished_at - started_at).total_seconds() * 1000),
                error=error,
            )
        )
        monitor.consecutive_errors += 1
        monitor.total_errors += 1
    monitor.last_error = error
    monitor.next_poll_at = next_poll_at
    if monitor.consecutive_errors >= max_consecutive:
        monitor.status = "error"
    await db.flush()
    return monitor_record(monitor)


async def state_counts(db: AsyncSession, monitor_id: str) -> dict[str, int]:
    """Listings per state, as `record_poll` keeps them on the monitor row."""
    monitor = await db.get(Monitor, monitor_id)
    if monitor is None:
        return {state: 0 for state in LISTING_STATES}
    return {state: int(getattr(monitor, f"{state}_count")) for state in LISTING_STATES}


async def listings_after(
    db: AsyncSession, monitor_id: str, after_item_id: int | None, limit: int
) -> list[ListingRecord]:
    """Keyset page of listings (for streaming exports: constant cost per page)."""
    query = select(Listing).where(Listing.monitor_id == monitor_id)
    if after_item_id is not None:
        query = query.where(Listing.item_id > after_item_id)
    rows = await db.scalars(query.order_by(Listing.item_id).limit(limit))
    return [listing_record(r) for r in rows]


async def events_after(
    db: AsyncSession, monitor_id: str, after_id: int | None, limit: int
) -> list[ListingEventRecord]:
    query = select(ListingEvent).where(ListingEvent.monitor_id == monitor_id)
    if after_id is not None:
        query = query.where(ListingEvent.id > after_id)
    rows = await db.scalars(query.order_by(ListingEvent.id).limit(limit))
    return [event_record(r) for r in rows]


async def polls_after(
    db: AsyncSession, monitor_id: str, after: tuple[datetime, str] | None, limit: int
) -> list[PollRecord]:
    query = select(Poll).where(Poll.monitor_id == monitor_id)
    if after is not None:
        started, poll_id = after
        query = query.where(
            (Poll.started_at > started) | ((Poll.started_at == started) & (Poll.id > poll_id))
        )
    rows = await db.scalars(query.order_by(Poll.started_at, Poll.id).limit(limit))
    return [poll_record(r) for r in rows]
