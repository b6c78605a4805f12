"""One poll's listing steps written (`record_poll`'s part that touches listings): the
monitor's rows and events, what they add up to (counts, likely sales, upgraded evidence),
the price book's sales, and the views alerts are decided on."""

from __future__ import annotations

from collections import Counter
from dataclasses import fields
from datetime import datetime
from decimal import Decimal

from sqlalchemy.orm import Session

from .._db.rows import to_record
from ..market.price_book import SaleChange, sale_change, site_of
from ..market.site_listings import DESCRIBED, Described, Description, field_of
from ..notify.alert_decisions import ListingView
from .models import ListingEvent, Monitor, MonitorListing
from .poll_decisions import ListingSnapshot, ListingStep
from .records import ObservedListing

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


def _is_likely(listing: ListingSnapshot | None) -> bool:
    return listing is not None and listing.state == "sold" and listing.evidence == "absence"


_VIEW_DESCRIBED = tuple(f.name for f in fields(ListingView) if f.name in DESCRIBED)


def _alert_view(row: MonitorListing, described: Description | None) -> ListingView:
    """What an alert says of the listing: the monitor's side of it and the site's
    description."""
    described_fields = {name: field_of(described, name) for name in _VIEW_DESCRIBED}
    return to_record(ListingView, row, **described_fields)


class ListingWrites:
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
        self.sales: list[SaleChange] = []  # the price book's side of the steps
        # What notifications look at: listings first seen, and price drops (old price).
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
            if step.item_id in self.described.ids:  # a version it had not seen
                row.description_id = self.described.ids[step.item_id]
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
        described = self.described.now.get(step.item_id)
        sale = sale_change(self.site, step, row, described, self.at)
        if sale is not None:
            self.sales.append(sale)

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
