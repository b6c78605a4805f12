"""What the engine's alert rules decide from, as the store hands it over: the contract between
the rules (the engine's: `decide_alerts` in `engine.pricing`, `decide_error_alerts` and
`decide_niche_alerts` in `engine.notifications`) and the outbox (`outbox.py`), which only
reads what they need and inserts the `AlertDraft`s they return (`alert_payloads.py`).

As with the listing state machine (`store/monitors/poll_decisions.py`), the rules reach the
store as callables,
handed to the transaction that finds the alerts:

- a poll's listing alerts (`AlertRules`), carried by the poll's decision
  (`PollDecision.alerts`): after writing a poll's listings, `record_poll` reads the monitor's
  effective rules, the price book of the new and cheaper listings' niches and the workspace's
  buying costs (`PollAlerts`), and queues exactly the alerts that come back;
- a monitor going to `error` (`ErrorAlertRules`, `record_poll_error`'s `decide=`): its rules
  and state (`ErrorAlerts`);
- the niche analysis' findings (`NicheAlertRules`, `store.notify.add_niche_alerts`'s
  `decide=`): the rules and the findings (`NicheAlerts`).

Every callable is pure and called inside the transaction, in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from ..market.price_book_records import BuyingCosts, Niche, NicheSales
from ..monitors.records import MonitorStatus
from .alert_payloads import AlertDraft, NicheAlertKind
from .records import RuleRecord
from .rules import niche_subject

NicheKey = tuple[int | None, str | None, str | None, str | None]


@dataclass(frozen=True, slots=True)
class ListingView:
    """What an alert says of a listing, and what rules filter on."""

    item_id: int
    title: str | None
    brand: str | None
    size: str | None
    condition: str | None
    category_id: int | None
    category_name: str | None
    price: Decimal | None
    currency: str | None
    url: str | None
    photo_url: str | None
    seller_id: int | None
    seller_login: str | None
    seller_business: bool | None


@dataclass(frozen=True, slots=True)
class AlertCandidate:
    """A listing first seen (`previous_price` None), or one whose price fell from
    `previous_price`, already at its new price."""

    listing: ListingView
    previous_price: Decimal | None

    @property
    def niche(self) -> Niche:
        x = self.listing
        return Niche(x.category_id, x.brand, x.size, x.condition, x.category_name)

    @property
    def subject(self) -> str:
        return f"item:{self.listing.item_id}"


@dataclass(frozen=True, slots=True)
class PollAlerts:
    """Everything one poll's listing alerts are decided from."""

    site: str  # the monitor's site, whose price book `books` are from
    at: datetime  # the poll's time on the service's clock
    rules: tuple[RuleRecord, ...]  # the monitor's effective rules, enabled
    candidates: tuple[AlertCandidate, ...]
    # The niches' recent sales, by `Niche.key`; a niche missing was not read (past the
    # poll's cap, or no rule's filters pass its listings).
    books: Mapping[NicheKey, NicheSales]
    costs: BuyingCosts  # the workspace's, for "buy below"
    queued: frozenset[tuple[str, str, str]]  # (rule, kind, subject) already in the outbox


# A poll's alert rules: pure, called in the poll's transaction, in a worker thread (again
# if PostgreSQL aborts that transaction to let another go on: `store/_db/unit.py`).
AlertRules = Callable[[PollAlerts], Sequence[AlertDraft]]


@dataclass(frozen=True, slots=True)
class ErrorAlerts:
    """A monitor that one failed poll has just put in `error`, and its effective rules."""

    poll_id: str  # the poll that put it there: one alert per error episode
    status: MonitorStatus
    last_error: str | None
    last_error_kind: str | None  # a `PollFailureKind`, None for an ordinary failure
    consecutive_errors: int
    rules: tuple[RuleRecord, ...]

    @property
    def subject(self) -> str:
        return f"error:{self.poll_id}"


ErrorAlertRules = Callable[[ErrorAlerts], Sequence[AlertDraft]]


@dataclass(frozen=True, slots=True)
class NicheFinding:
    """One niche alert the analysis found: its niche's keys (the subject, and what a rule's
    brand, size and condition filters read), the sales it rests on (what `min_confidence`
    reads), and what it says (`niche`, `reason`, `figures`, as the alert shows them)."""

    kind: NicheAlertKind
    category_id: int | None
    brand: str | None
    size: str | None
    condition: str | None
    sold: int
    niche: Mapping[str, Any]
    reason: str
    figures: Mapping[str, Any]

    @property
    def subject(self) -> str:
        return niche_subject(self.category_id, self.brand, self.size, self.condition)


@dataclass(frozen=True, slots=True)
class NicheAlerts:
    """Everything a monitor's niche alerts are decided from."""

    rules: tuple[RuleRecord, ...]  # the monitor's effective rules, enabled
    findings: tuple[NicheFinding, ...]


NicheAlertRules = Callable[[NicheAlerts], Sequence[AlertDraft]]
