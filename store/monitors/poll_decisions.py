"""What a poll decided, as the store receives it: the contract between the listing state
machine (the engine's, `engine.monitors._listing_states`) and `record_poll`, which only
persists its decisions.

The engine imports the store, never the other way round, so the rules reach the store as a
callable (`PollRules`): `record_poll` reads the listings a poll mentions, hands their
snapshots to the rules inside the poll's own transaction, and writes what comes back. The
writer passes the rules with every poll (`decide=`): the engine's monitors, the demo's sample
month and the tests all pass the engine's `decide_poll`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from ..notify.alert_decisions import AlertRules
from .records import (
    Evidence,
    ListingState,
    MonitorStatus,
    ObservedListing,
    PollOutcome,
)

EventKind = Literal["new", "price", "counts", "state"]


@dataclass(frozen=True, slots=True)
class ListingSnapshot:
    """What the rules read of a stored listing, and the whole of what they decide for it:
    the other fields are the feed's, copied as observed (those a sighting carries)."""

    item_id: int
    state: ListingState
    evidence: Evidence | None  # `listings.state_evidence`: None, the feed itself
    absent_polls: int = 0
    in_feed: bool = True
    promoted: bool = False
    price: Decimal | None = None
    favourites: int | None = None
    category_id: int | None = None
    category_name: str | None = None


@dataclass(frozen=True, slots=True)
class MonitorSnapshot:
    status: MonitorStatus
    bootstrapped: bool  # a poll has succeeded before


@dataclass(frozen=True, slots=True)
class EventDraft:
    """One `listing_events` row to write, stamped with the poll's time by the store."""

    kind: EventKind
    from_state: ListingState | None = None
    to_state: ListingState | None = None
    evidence: Evidence | None = None
    price: Decimal | None = None
    favourites: int | None = None
    views: int | None = None


@dataclass(frozen=True, slots=True)
class ListingStep:
    """One observation applied to one listing."""

    item_id: int
    before: ListingSnapshot | None  # None: first seen in this step (a row to create)
    after: ListingSnapshot
    sighting: ObservedListing | None = None  # in the feed: its fields are copied
    events: tuple[EventDraft, ...] = ()
    changed: bool = False  # counts in the poll's `changed`
    dropped_from: Decimal | None = None  # the price before a drop (a `price_drop` alert)
    confirmed_by: Evidence | None = None  # a likely sale a source confirmed: the sale's
    # event takes this evidence, in place (no second sale in the history)

    @property
    def moved(self) -> bool:
        """The state changed (`state_changed_at` is the poll's time)."""
        return any(event.kind == "state" for event in self.events)


@dataclass(frozen=True, slots=True)
class MonitorStep:
    status: MonitorStatus
    bootstrap: bool  # the monitor's first successful poll: no alerts, `bootstrapped_at` set


@dataclass(frozen=True, slots=True)
class PollDecision:
    steps: tuple[ListingStep, ...]  # in the order to apply; one listing may have several
    monitor: MonitorStep | None  # None: the monitor is gone
    # How to judge the listing alerts the steps cause, once the store has read what that
    # takes (rules, the price book): the engine's alert rules, pure, called in the same
    # transaction (`store/notify/alert_decisions.py`). None: this poll alerts on no listing.
    alerts: AlertRules | None = None


# (the poll's outcome, the snapshots of the stored listings it mentions, the monitor) ->
# what to write. Pure: it is called inside the poll's transaction, in a worker thread
# (again if PostgreSQL aborts that transaction to let another go on: `store/_db/unit.py`).
PollRules = Callable[
    [PollOutcome, Mapping[int, ListingSnapshot], MonitorSnapshot | None], PollDecision
]
