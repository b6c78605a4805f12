"""Writing polls: one successful poll's observations, or one failed poll, in the caller's
transaction. `record_poll` is the only writer of listings and their events.

How a listing's state moves, and the evidence each move records (`listing_events.evidence`
and `listings.state_evidence`, which always describes the current state):

- first seen in the feed: `open`, no evidence (the feed itself);
- seen in the feed again while `reserved`, `deleted` or sold *by absence*: back to `open`, no
  evidence (a reservation fell through, a relisting, or a likely sale that was not one);
- confirmed by a source (`ConfirmedState`: the detail API or the item page): its state and
  evidence. A listing confirmed sold by a source stays sold whatever comes later;
- absent from the feed's window (`PollOutcome.absent`) `likely_after` polls in a row, open or
  reserved, last seen organically (not promoted): `sold` with evidence `absence`, a *likely*
  sale (`Monitor.likely_sold_count`).

A source confirming the state a listing already holds changes no state and writes no new
event: it updates `state_evidence`. When that upgrades a likely sale (sold by absence) to a
confirmed one, the evidence of the state event that recorded the sale is upgraded in place,
so the history holds one sale, at the time it was detected, established by the source.

Both writers also queue the notifications they cause, in the same transaction (see
`_notify_outbox`): a poll its new listings, deals and price drops (none for the bootstrap
poll, where everything is new), a failed poll that puts the monitor in `error` its
`monitor_error`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from ._fence import fence
from ._monitor_models import Listing, ListingEvent, Monitor, Poll
from ._monitor_records import (
    ConfirmedState,
    MonitorRecord,
    ObservedListing,
    PollOutcome,
    PollRecord,
)
from ._notify_outbox import write_error_alerts, write_poll_alerts
from ._rows import to_record

_IN_CHUNK = 500  # bound on IN (...) lists: SQLite caps bound parameters per statement
_LIVE = ("open", "reserved")


def poll_record(row: Poll) -> PollRecord:
    return to_record(PollRecord, row)


def _likely(row: Listing) -> bool:
    """Sold by absence from the feed: a likely sale, which the feed or a source can undo."""
    return row.state == "sold" and row.state_evidence == "absence"


def _existing(db: Session, monitor_id: str, ids: Sequence[int]) -> dict[int, Listing]:
    found: dict[int, Listing] = {}
    for start in range(0, len(ids), _IN_CHUNK):
        chunk = ids[start : start + _IN_CHUNK]
        rows = db.scalars(
            select(Listing).where(Listing.monitor_id == monitor_id, Listing.item_id.in_(chunk))
        )
        found.update((row.item_id, row) for row in rows)
    return found


class _Changes:
    """What one poll does to the listings: rows and events added, counters moved."""

    def __init__(self, db: Session, monitor_id: str, poll_id: str, at: datetime) -> None:
        self.db, self.monitor_id, self.poll_id, self.at = db, monitor_id, poll_id, at
        self.new = self.changed = 0
        self.moved: Counter[str] = Counter()  # listings entering (+) and leaving (-) states
        self.likely = 0  # likely sales gained (+) and lost (-)
        self.upgraded: dict[int, str] = {}  # likely sales now confirmed: item -> evidence
        # What notifications look at: listings first seen, and price drops (row, old price).
        self.new_rows: list[Listing] = []
        self.drops: list[tuple[Listing, Decimal]] = []

    def event(self, item_id: int, kind: str, **kw: Any) -> None:
        self.db.add(
            ListingEvent(
                monitor_id=self.monitor_id,
                item_id=item_id,
                poll_id=self.poll_id,
                kind=kind,
                at=self.at,
                **kw,
            )
        )

    def move(self, row: Listing, state: str, evidence: str | None) -> None:
        """A state change of `row`, with its event and the monitor's counters."""
        self.event(row.item_id, "state", from_state=row.state, to_state=state, evidence=evidence)
        self.likely -= _likely(row)
        self.moved[row.state] -= 1
        self.moved[state] += 1
        row.state, row.state_changed_at, row.state_evidence = state, self.at, evidence
        self.likely += _likely(row)

    def seen(self, existing: dict[int, Listing], seen: ObservedListing) -> None:
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
            "condition_raw": seen.condition_raw,
            "category_name": seen.category_name,
            "total_price": seen.total_price,
            "service_fee": seen.service_fee,
            "seller_login": seen.seller_login,
            "seller_business": seen.seller_business,
        }
        row = existing.get(seen.item_id)
        if row is None:
            existing[seen.item_id] = row = Listing(
                monitor_id=self.monitor_id,
                item_id=seen.item_id,
                first_seen_at=self.at,
                last_seen_at=self.at,
                state="open",
                state_changed_at=self.at,
                in_feed=True,
                promoted=seen.promoted,
                state_evidence=None,
                absent_polls=0,
                **fields,
            )
            self.db.add(row)
            self.event(
                seen.item_id,
                "new",
                to_state="open",
                price=seen.price,
                favourites=seen.favourites,
                views=seen.views,
            )
            self.new += 1
            self.moved["open"] += 1
            self.new_rows.append(row)
            return
        touched = False
        if seen.price is not None and row.price is not None and seen.price != row.price:
            self.event(seen.item_id, "price", price=seen.price)
            if seen.price < row.price:
                self.drops.append((row, row.price))
            touched = True
        if seen.favourites is not None and seen.favourites != row.favourites:
            self.event(seen.item_id, "counts", favourites=seen.favourites, views=seen.views)
            touched = True
        # Back in the feed means on sale again (a reservation fell through, a relisting, or
        # a likely sale that was not one); a sale a source confirmed stays a sale.
        if row.state in ("reserved", "deleted") or _likely(row):
            self.move(row, "open", None)
            touched = True
        if row.category_name and seen.category_id in (None, row.category_id):
            del fields["category_name"]  # a name once stored stays (a confirmation's is its own)
        for name, value in fields.items():
            if value is not None:
                setattr(row, name, value)
        row.promoted = seen.promoted
        row.last_seen_at, row.in_feed, row.absent_polls = self.at, True, 0
        self.changed += touched

    def confirmed(self, row: Listing, confirmation: ConfirmedState) -> None:
        row.in_feed, row.absent_polls = False, 0
        if confirmation.category_name and not row.category_name:
            row.category_name = confirmation.category_name  # the item page names it
        if row.state == "sold" and not _likely(row):
            return  # a confirmed sale is final
        if confirmation.state != row.state:
            self.move(row, confirmation.state, confirmation.evidence)
            self.changed += 1
        elif confirmation.evidence != row.state_evidence and confirmation.evidence != "absence":
            # The state held is now established by a source: no state change, no new event.
            if _likely(row):
                self.upgraded[row.item_id] = confirmation.evidence
                self.likely -= 1
                self.changed += 1
            row.state_evidence = confirmation.evidence

    def absent(self, row: Listing, likely_after: int) -> None:
        # Last seen as a paid placement: promoted listings follow no filter and no date order,
        # so missing from an answer says nothing about them (MARKETPLACE.md).
        if row.state not in _LIVE or row.promoted:
            return
        row.absent_polls += 1
        row.in_feed = False
        if row.absent_polls >= likely_after:
            self.move(row, "sold", "absence")
            self.changed += 1


def _upgrade_sale_events(db: Session, monitor_id: str, upgraded: dict[int, str]) -> None:
    """Give the state event that recorded each likely sale (the listing's latest state event)
    the evidence that now confirms it. Rare (a likely sale a source confirms later), so the
    scan of the monitor's events this costs is acceptable."""
    by_evidence: dict[str, list[int]] = {}
    for item_id, evidence in sorted(upgraded.items()):
        by_evidence.setdefault(evidence, []).append(item_id)
    for evidence, items in by_evidence.items():
        for start in range(0, len(items), _IN_CHUNK):
            latest = (
                select(func.max(ListingEvent.id))
                .where(
                    ListingEvent.monitor_id == monitor_id,
                    ListingEvent.kind == "state",
                    ListingEvent.item_id.in_(items[start : start + _IN_CHUNK]),
                )
                .group_by(ListingEvent.item_id)
            )
            db.execute(
                update(ListingEvent)
                .where(ListingEvent.id.in_(latest), ListingEvent.evidence == "absence")
                .values(evidence=evidence)
                .execution_options(synchronize_session=False)
            )


def record_poll(
    db: Session, monitor_id: str, outcome: PollOutcome, lease_token: int | None = None
) -> PollRecord:
    """Apply one poll's observations against the stored state, all or nothing.

    Idempotent: a poll id already recorded is not applied again (a replay after a crash
    between commit and acknowledgement), and changes are computed against what the database
    holds now, so the same observation applied twice yields no second event (an absence is
    the exception by nature: each poll that misses a listing is one more absence). A listing
    seen in the feed or confirmed by a source in this poll is not also counted absent. With
    a `lease_token` (cluster mode) nothing is written unless the lease is still this poll's:
    `LeaseLost` otherwise.
    """
    if lease_token is not None:
        fence(db, "monitor", monitor_id, lease_token)
    already = db.get(Poll, outcome.poll_id)
    if already is not None:
        return poll_record(already)
    # Listings and their events are stamped when the market says it looked; the poll and the
    # monitor's schedule stay on the service's clock.
    at = outcome.observed_at or outcome.finished_at
    accounted = {s.item_id for s in outcome.seen} | {c.item_id for c in outcome.confirmed}
    absent = [i for i in dict.fromkeys(outcome.absent) if i not in accounted]
    existing = _existing(db, monitor_id, sorted(accounted.union(absent)))
    changes = _Changes(db, monitor_id, outcome.poll_id, at)
    for seen in outcome.seen:
        changes.seen(existing, seen)
    for confirmation in outcome.confirmed:
        row = existing.get(confirmation.item_id)
        if row is not None:  # else never seen by this monitor: nothing to confirm against
            changes.confirmed(row, confirmation)
    for item_id in absent:
        row = existing.get(item_id)
        if row is not None:
            changes.absent(row, max(1, outcome.likely_after))
    if changes.upgraded:
        _upgrade_sale_events(db, monitor_id, changes.upgraded)
    poll = Poll(
        id=outcome.poll_id,
        monitor_id=monitor_id,
        started_at=outcome.started_at,
        finished_at=outcome.finished_at,
        pages=outcome.pages,
        items=len(outcome.seen),
        new=changes.new,
        changed=changes.changed,
        confirmed=len(outcome.confirmed),
        duration_ms=int((outcome.finished_at - outcome.started_at).total_seconds() * 1000),
        error=None,
        market_at=outcome.observed_at if outcome.clock == "market" else None,
        clock=outcome.clock,
    )
    db.add(poll)
    monitor = db.get(Monitor, monitor_id)
    if monitor is not None:
        monitor.last_poll_at = outcome.finished_at
        monitor.next_poll_at = outcome.next_poll_at
        monitor.consecutive_errors = 0
        monitor.last_error = None
        monitor.last_error_kind = None
        if monitor.status == "error":
            monitor.status = "active"  # the marketplace answers again: back by itself
        monitor.polls += 1
        for state, delta in changes.moved.items():
            setattr(monitor, f"{state}_count", getattr(monitor, f"{state}_count") + delta)
        monitor.likely_sold_count += changes.likely
        bootstrap = monitor.bootstrapped_at is None
        if bootstrap:
            monitor.bootstrapped_at = outcome.finished_at
            if monitor.status == "paused":
                monitor.status = "active"
        write_poll_alerts(
            db,
            monitor,
            new_rows=changes.new_rows,
            drops=changes.drops,
            bootstrap=bootstrap,
            at=outcome.finished_at,  # the service's clock, which the dispatcher runs on
        )
    db.flush()
    return poll_record(poll)


def record_poll_error(
    db: Session,
    monitor_id: str,
    *,
    poll_id: str,
    started_at: datetime,
    finished_at: datetime,
    error: str,
    next_poll_at: datetime,
    max_consecutive: int,
    kind: str | None = None,
    lease_token: int | None = None,
) -> MonitorRecord | None:
    """Count a failed poll; after `max_consecutive` in a row the monitor goes to `error`.
    `kind` (a `PollFailureKind`, or None for an ordinary failure) is kept with the error
    until a poll succeeds. Fenced like `record_poll`."""
    if lease_token is not None:
        fence(db, "monitor", monitor_id, lease_token)
    monitor = db.get(Monitor, monitor_id)
    if monitor is None:
        return None
    if db.get(Poll, poll_id) is None:
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
    monitor.last_error_kind = kind
    monitor.next_poll_at = next_poll_at
    if monitor.consecutive_errors >= max_consecutive and monitor.status != "error":
        monitor.status = "error"
        write_error_alerts(db, monitor, poll_id=poll_id, at=finished_at)
    db.flush()
    return to_record(MonitorRecord, monitor)
