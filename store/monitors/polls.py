"""Writing polls: one successful poll's observations, or one failed poll, in the caller's
transaction. `record_poll` is the only writer of listings and their events.

It decides nothing about them: how a listing's state moves (a confirmed sale stays sold, a
reservation may reopen, repeated absence makes a likely sale...) and how the monitor moves
(out of `error`, out of the bootstrap's pause) is the engine's state machine
(`engine.monitors._listing_states`), which `record_poll` calls inside the poll's transaction
with the snapshots of the stored listings the poll mentions (`PollRules`, see
`poll_decisions.py`). What it returns is written here: the monitor's rows and events
(`monitor_listings`, `listing_events`), the per-state counters kept on the monitor row, the
upgrade in place of a likely sale's event that a source confirmed, and the sightings offered
as the site's descriptions of its listings (`store/market/site_listings.py`: stored once per
site, however many monitors see a listing).

Both writers also queue the notifications they cause, in the same transaction (see
`store/notify/outbox.py`), as the engine's alert rules decide them
(`store/notify/alert_decisions.py`): a poll its
new listings, deals and price drops (none for the bootstrap poll, where everything is new),
a failed poll that puts the monitor in `error` its `monitor_error`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import fields
from datetime import datetime
from decimal import Decimal
from typing import cast

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from .._db.errors import LeaseLost
from .._db.rows import to_record
from ..cluster.fence import fence
from ..market.price_book import moves_a_sale, record_sale_changes, sale_change, site_of
from ..market.site_listings import DESCRIBED, Described, Description, describe
from ..notify.alert_decisions import AlertRules, ErrorAlertRules, ListingView
from ..notify.outbox import write_error_alerts, write_poll_alerts
from .models import ListingEvent, Monitor, MonitorListing, Poll
from .poll_decisions import (
    ListingSnapshot,
    ListingStep,
    MonitorSnapshot,
    MonitorStep,
    PollRules,
)
from .records import (
    Evidence,
    ListingState,
    MonitorRecord,
    MonitorStatus,
    ObservedListing,
    PollFailure,
    PollOutcome,
    PollRecord,
)

IN_CHUNK = 500  # bound on IN (...) lists: SQLite caps bound parameters per statement
# The columns the state machine decides (`ListingSnapshot` field -> column), and a sighting's
# other fields the monitor keeps, copied onto its row as observed (those it carries); the
# rest of a sighting describes the listing, kept once per site (`DESCRIBED`).
_DECIDED = {
    f.name: "state_evidence" if f.name == "evidence" else f.name
    for f in fields(ListingSnapshot)
    if f.name != "item_id"
}
_OBSERVED = tuple(
    f.name
    for f in fields(ObservedListing)
    if f.name not in _DECIDED and f.name != "item_id" and f.name not in DESCRIBED
)


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


def _is_likely(listing: ListingSnapshot | None) -> bool:
    return listing is not None and listing.state == "sold" and listing.evidence == "absence"


def _alert_view(row: MonitorListing, described: Description | None) -> ListingView:
    """What an alert says of the listing: the monitor's side of it and the site's
    description."""
    return to_record(ListingView, row, **{name: _of(described, name) for name in _VIEW_DESCRIBED})


def _of(described: Description | None, name: str) -> object:
    return None if described is None else described[name]


_VIEW_DESCRIBED = tuple(f.name for f in fields(ListingView) if f.name in DESCRIBED)


class _Writes:
    """Persists one poll's listing steps: rows and events, and what they add up to."""

    def __init__(
        self,
        db: Session,
        monitor: Monitor,
        poll_id: str,
        at: datetime,
        rows: dict[int, MonitorListing],
        described: Described,
    ) -> None:
        self.db, self.monitor_id, self.poll_id, self.at = db, monitor.id, poll_id, at
        self.rows = rows
        self.site = site_of(monitor.url)  # whose price book sales go to
        self.described = described
        self.new = self.changed = 0
        self.moved: Counter[str] = Counter()  # listings entering (+) and leaving (-) states
        self.likely = 0  # likely sales gained (+) and lost (-)
        self.upgraded: dict[int, str] = {}  # likely sales now confirmed: item -> evidence
        # What the price book and notifications look at: steps that may move a sale,
        # listings first seen, price drops (old price).
        self.sale_steps: list[ListingStep] = []
        self.new_ids: list[int] = []
        self.drops: list[tuple[int, Decimal]] = []

    def apply(self, step: ListingStep) -> None:
        before, after = step.before, step.after
        row = self._created(step) if before is None else self.rows[step.item_id]
        if before is not None and step.sighting is not None:
            for name in _OBSERVED:
                value = getattr(step.sighting, name)
                if value is not None:
                    setattr(row, name, value)
        for name, column in _DECIDED.items():
            setattr(row, column, getattr(after, name))
        if step.sighting is not None:
            row.last_seen_at = self.at
            row.description_id = self.described.ids.get(step.item_id, row.description_id)
        if step.moved:
            row.state_changed_at = self.at
        for event in step.events:
            self.db.add(
                ListingEvent(
                    monitor_id=self.monitor_id, item_id=step.item_id, poll_id=self.poll_id,
                    kind=event.kind, at=self.at, from_state=event.from_state,
                    to_state=event.to_state, evidence=event.evidence, price=event.price,
                    favourites=event.favourites, views=event.views,
                )
            )  # fmt: skip
        self._count(step)
        if moves_a_sale(step):
            self.sale_steps.append(step)

    def _created(self, step: ListingStep) -> MonitorListing:
        seen = step.sighting
        assert seen is not None, "only a sighting makes a listing"
        observed = {name: getattr(seen, name) for name in _OBSERVED}
        row = MonitorListing(
            monitor_id=self.monitor_id, item_id=step.item_id, first_seen_at=self.at,
            last_seen_at=self.at, state_changed_at=self.at,
            description_id=self.described.ids[step.item_id], **observed,
        )  # fmt: skip
        self.db.add(row)
        self.rows[step.item_id] = row
        self.new_ids.append(step.item_id)
        return row

    def record_sales(self) -> None:
        """The price book's side of the steps, in this transaction."""
        sales = []
        for step in self.sale_steps:
            row, described = self.rows[step.item_id], self.described.now.get(step.item_id)
            sale = sale_change(self.site, step, row, described, self.at)
            if sale is not None:
                sales.append(sale)
        record_sale_changes(self.db, sales)

    def view(self, item_id: int) -> ListingView:
        return _alert_view(self.rows[item_id], self.described.now.get(item_id))

    def _count(self, step: ListingStep) -> None:
        before, after = step.before, step.after
        if before is None:
            self.new += 1
            self.moved[after.state] += 1
        elif before.state != after.state:
            self.moved[before.state] -= 1
            self.moved[after.state] += 1
        self.likely += _is_likely(after) - _is_likely(before)
        self.changed += step.changed
        if step.dropped_from is not None:
            self.drops.append((step.item_id, step.dropped_from))
        if step.confirmed_by is not None:
            self.upgraded[step.item_id] = step.confirmed_by


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


def _poll_row(monitor_id: str, outcome: PollOutcome, writes: _Writes) -> Poll:
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
    writes: _Writes,
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
) -> PollRecord:
    """Apply one poll's observations against the stored state, all or nothing, as `decide`
    (the engine's state machine) rules.

    Idempotent: a poll id already recorded is not applied again (a replay after a crash
    between commit and acknowledgement), and changes are decided against what the database
    holds now, so the same observation applied twice yields no second event (an absence is
    the exception by nature: each poll that misses a listing is one more absence). With
    a `lease_token` (cluster mode) nothing is written unless the lease is still this poll's:
    `LeaseLost` otherwise.
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
    writes = _Writes(db, monitor, outcome.poll_id, at, rows, described)
    for step in decision.steps:
        writes.apply(step)
    writes.record_sales()
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
