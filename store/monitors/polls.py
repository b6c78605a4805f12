"""Writing polls: one successful poll's observations, or one failed poll, in the caller's
transaction. `record_poll` is the only writer of listings (`monitor_listings`, and of
`site_listings` the versions its monitors see) and their events.

It decides nothing about them: how a listing's state moves (a confirmed sale stays sold, a
reservation may reopen, repeated absence makes a likely sale...) and how the monitor moves
(out of `error`, out of the bootstrap's pause) is the engine's state machine
(`engine.monitors._listing_states`), which `record_poll` calls inside the poll's transaction
with the snapshots of the stored listings the poll mentions (`PollRules`, see
`poll_decisions.py`). What it returns is written here: the monitor's rows and events
(`monitor_listings`, `listing_events`), the per-state counters kept on the monitor row, the
upgrade in place of a likely sale's event that a source confirmed, and the sightings as
versions of the site's descriptions of its listings (`store/market/site_listings.py`: each
version stored once per site, however many monitors see it; each monitor's row points at the
version it saw last).

Both writers also queue the notifications they cause, in the same transaction (see
`store/notify/outbox.py`), as the engine's alert rules decide them
(`store/notify/alert_decisions.py`): a poll its
new listings, deals and price drops (none for the bootstrap poll, where everything is new),
a failed poll that puts the monitor in `error` its `monitor_error`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import cast

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from .._db.errors import LeaseLost
from .._db.rows import to_record
from ..cluster.fence import fence
from ..market.price_book import record_sale_changes, site_of
from ..market.site_listings import describe
from ..notify.alert_decisions import AlertRules, ErrorAlertRules
from ..notify.outbox import write_error_alerts, write_poll_alerts
from .listing_writes import ListingWrites
from .models import ListingEvent, Monitor, MonitorListing, Poll
from .poll_decisions import (
    ListingSnapshot,
    MonitorSnapshot,
    MonitorStep,
    PollRules,
)
from .records import (
    Evidence,
    ListingState,
    MonitorRecord,
    MonitorStatus,
    PollFailure,
    PollOutcome,
    PollRecord,
)

IN_CHUNK = 500  # bound on IN (...) lists: SQLite caps bound parameters per statement


def poll_record(row: Poll) -> PollRecord:
    return to_record(PollRecord, row)


def _existing(db: Session, monitor_id: str, ids: Sequence[int]) -> dict[int, MonitorListing]:
    found: dict[int, MonitorListing] = {}
    for start in range(0, len(ids), IN_CHUNK):
        chunk = ids[start : start + IN_CHUNK]
        rows = db.scalars(
            select(MonitorListing).where(
                MonitorListing.monitor_id == monitor_id, MonitorListing.item_id.in_(chunk)
            )
        )
        found.update((row.item_id, row) for row in rows)
    return found


def _mentioned(outcome: PollOutcome) -> list[int]:
    """Every listing the poll says something about, each once, by id."""
    ids: Iterable[int] = (
        *(s.item_id for s in outcome.seen),
        *(c.item_id for c in outcome.confirmed),
        *outcome.absent,
        *outcome.unknown,
    )
    return sorted(set(ids))


def _snapshot(row: MonitorListing) -> ListingSnapshot:
    return ListingSnapshot(
        item_id=row.item_id, state=cast(ListingState, row.state),
        evidence=cast(Evidence | None, row.state_evidence), absent_polls=row.absent_polls,
        in_feed=row.in_feed, promoted=row.promoted, price=row.price, favourites=row.favourites,
        category_id=row.category_id, category_name=row.category_name,
    )  # fmt: skip


def _monitor_snapshot(monitor: Monitor) -> MonitorSnapshot:
    return MonitorSnapshot(cast(MonitorStatus, monitor.status), monitor.bootstrapped_at is not None)


def _upgrade_sale_events(db: Session, monitor_id: str, upgraded: dict[int, str]) -> None:
    """Give the state event that recorded each likely sale (the listing's latest state event)
    the evidence that now confirms it. Rare (a likely sale a source confirms later), so the
    scan of the monitor's events this costs is acceptable."""
    by_evidence: dict[str, list[int]] = {}
    for item_id, evidence in sorted(upgraded.items()):
        by_evidence.setdefault(evidence, []).append(item_id)
    for evidence, items in by_evidence.items():
        for start in range(0, len(items), IN_CHUNK):
            latest = (
                select(func.max(ListingEvent.id))
                .where(
                    ListingEvent.monitor_id == monitor_id,
                    ListingEvent.kind == "state",
                    ListingEvent.item_id.in_(items[start : start + IN_CHUNK]),
                )
                .group_by(ListingEvent.item_id)
            )
            db.execute(
                update(ListingEvent)
                .where(ListingEvent.id.in_(latest), ListingEvent.evidence == "absence")
                .values(evidence=evidence)
                .execution_options(synchronize_session=False)
            )


def _poll_row(monitor_id: str, outcome: PollOutcome, writes: ListingWrites) -> Poll:
    return Poll(
        id=outcome.poll_id,
        monitor_id=monitor_id,
        started_at=outcome.started_at,
        finished_at=outcome.finished_at,
        pages=outcome.pages,
        items=len(outcome.seen),
        new=writes.new,
        changed=writes.changed,
        confirmed=len(outcome.confirmed),
        duration_ms=int((outcome.finished_at - outcome.started_at).total_seconds() * 1000),
        error=None,
        market_at=outcome.observed_at if outcome.clock == "market" else None,
        clock=outcome.clock,
    )


def _polled(
    db: Session,
    monitor: Monitor,
    outcome: PollOutcome,
    step: MonitorStep,
    writes: ListingWrites,
    alerts: AlertRules | None,
) -> None:
    """The monitor after a successful poll: its schedule, errors cleared, counters moved, the
    status decided, and the poll's alerts queued."""
    monitor.last_poll_at = outcome.finished_at
    monitor.next_poll_at = outcome.next_poll_at
    monitor.consecutive_errors = 0
    monitor.last_error = None
    monitor.last_error_kind = None
    if monitor.status != step.status:
        monitor.status = step.status
    monitor.polls += 1
    for state, delta in writes.moved.items():
        setattr(monitor, f"{state}_count", getattr(monitor, f"{state}_count") + delta)
    monitor.likely_sold_count += writes.likely
    if step.bootstrap:
        monitor.bootstrapped_at = outcome.finished_at
    write_poll_alerts(
        db,
        monitor,
        new=[writes.view(item_id) for item_id in writes.new_ids],
        drops=[(writes.view(item_id), old) for item_id, old in writes.drops],
        bootstrap=step.bootstrap,
        at=outcome.finished_at,  # the service's clock, which the dispatcher runs on
        decide=alerts,
    )


def record_poll(
    db: Session,
    monitor_id: str,
    outcome: PollOutcome,
    decide: PollRules,
    lease_token: int | None = None,
    moved_on: list[int] | None = None,
) -> PollRecord:
    """Apply one poll's observations against the stored state, all or nothing, as `decide`
    (the engine's state machine) rules. The versions of descriptions the monitor moved on
    from are added to `moved_on`, to drop once this transaction is committed
    (`drop_unheld`: two monitors moving on from one version at once would each see the
    other's hold in their own transactions, and keep it).

    Idempotent: a poll id already recorded is not applied again (a replay after a crash
    between commit and acknowledgement), and changes are decided against what the database
    holds now, so the same observation applied twice yields no second event (an absence is
    the exception by nature: each poll that misses a listing is one more absence). With
    a `lease_token` (cluster mode) nothing is written unless the lease is still this poll's:
    `LeaseLost` otherwise; `LeaseLost` too, with or without one, when the monitor was
    deleted meanwhile (nothing of it is kept).
    """

    if lease_token is not None:
        fence(db, "monitor", monitor_id, lease_token)
    already = db.get(Poll, outcome.poll_id)
    if already is not None:
        return poll_record(already)
    monitor = db.get(Monitor, monitor_id)
    if monitor is None:  # deleted while it polled: nothing of it is kept
        raise LeaseLost("monitor", monitor_id)
    rows = _existing(db, monitor_id, _mentioned(outcome))
    stored = {item_id: _snapshot(row) for item_id, row in rows.items()}
    decision = decide(outcome, stored, _monitor_snapshot(monitor))
    # Listings and their events are stamped when the market says it looked; the poll and the
    # monitor's schedule stay on the service's clock.
    at = outcome.observed_at or outcome.finished_at
    # The descriptions first: a listing first seen is written with the version it saw.
    held = {item_id: row.description_id for item_id, row in rows.items()}
    seen = {s.item_id: s.sighting for s in decision.steps if s.sighting is not None}
    described = describe(db, site_of(monitor.url), held, seen)
    writes = ListingWrites(db, monitor, outcome.poll_id, at, rows, described)
    for step in decision.steps:
        writes.apply(step)
    record_sale_changes(db, writes.sales)  # the site's price book, in this transaction
    if writes.upgraded:
        _upgrade_sale_events(db, monitor_id, writes.upgraded)
    for item_id, rank in outcome.ranks.items():  # the engine's places, for listings seen
        if item_id in rows:
            rows[item_id].feed_rank = rank
    poll = _poll_row(monitor_id, outcome, writes)
    db.add(poll)
    if decision.monitor is not None:
        _polled(db, monitor, outcome, decision.monitor, writes, decision.alerts)
    db.flush()
    if moved_on is not None:
        moved_on.extend(held[i] for i, now in described.ids.items() if i in held and held[i] != now)
    return poll_record(poll)


def record_poll_error(
    db: Session,
    monitor_id: str,
    failure: PollFailure,
    finished_at: datetime,
    decide: ErrorAlertRules,
    lease_token: int | None = None,
) -> MonitorRecord | None:
    """Count a failed poll (see `PollFailure`); fenced like `record_poll`. The failure that
    puts the monitor in `error` queues the alerts `decide` (the engine's rules) draws from
    it."""
    if lease_token is not None:
        fence(db, "monitor", monitor_id, lease_token)
    monitor = db.get(Monitor, monitor_id)
    if monitor is None:
        return None
    if db.get(Poll, failure.poll_id) is None:
        db.add(
            Poll(
                id=failure.poll_id,
                monitor_id=monitor_id,
                started_at=failure.started_at,
                finished_at=finished_at,
                pages=0,
                items=0,
                new=0,
                changed=0,
                confirmed=0,
                duration_ms=int((finished_at - failure.started_at).total_seconds() * 1000),
                error=failure.error,
            )
        )
        monitor.total_errors += 1
        monitor.consecutive_errors += 1
    # A pause by the user (after the bootstrap) stays; `error` and the bootstrap's pause end.
    waiting = monitor.status == "error" or (
        monitor.status == "paused" and monitor.bootstrapped_at is None
    )
    if failure.keeps_active and waiting:
        monitor.status = "active"
    monitor.last_error = failure.error
    monitor.last_error_kind = failure.kind
    monitor.next_poll_at = failure.next_poll_at
    if (
        not failure.keeps_active
        and monitor.consecutive_errors >= failure.max_consecutive
        and monitor.status != "error"
    ):
        monitor.status = "error"
        write_error_alerts(db, monitor, poll_id=failure.poll_id, at=finished_at, decide=decide)
    db.flush()
    return to_record(MonitorRecord, monitor)
