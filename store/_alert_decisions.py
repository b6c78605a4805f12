"""What a poll's listing alerts are decided from, as the store hands it over: the contract
between the engine's alert rules (`engine.pricing.decide_alerts`) and `write_poll_alerts`,
which only reads what they need and inserts what they decide.

As with the listing state machine (`_poll_decisions`), the rules reach the store as a callable
(`AlertRules`), carried by the poll's decision (`PollDecision.alerts`): after writing a poll's
listings, `record_poll` reads the monitor's effective rules, the price book of the new and
cheaper listings' niches and the workspace's buying costs, hands them to the rules inside the
same transaction, and queues exactly the alerts that come back (one per channel).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from ._notify_records import NotifyKind, RuleRecord
from ._price_book_records import BuyingCosts, Niche, NicheSales

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


@dataclass(frozen=True, slots=True)
class AlertDraft:
    """One alert to queue for one rule (on each of the rule's channels): its kind, its
    subject (the outbox's unique key with the rule and channel) and its payload's body
    (`listing`, `niche`, `reason`, `figures`, `buy_below`)."""

    rule_id: str
    kind: NotifyKind
    subject: str
    body: Mapping[str, Any]


# A poll's alert rules: pure, called in the poll's transaction, in a worker thread.
AlertRules = Callable[[PollAlerts], Sequence[AlertDraft]]
