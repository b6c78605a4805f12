"""What an alert says, as the engine decides it and the outbox stores it: one typed body per
family of kinds, and `AlertDraft`, one alert for one rule.

The engine's alert rules (`engine.pricing.decide_alerts` for a poll's listings,
`engine.notifications.decide_error_alerts` and `decide_niche_alerts`) return drafts; the
outbox (`store/notify/outbox.py`) wraps each body in the webhook envelope (event type, id, time,
monitor, rule) and inserts it, one row per channel, deciding and wording nothing. Each body
names the kinds it may carry, so a draft cannot pair a kind with another kind's payload.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args

from ..monitors.records import MonitorStatus
from .records import NotifyKind

Figures = Mapping[str, float | int | None]
ListingAlertKind = Literal["new_listing", "deal", "price_drop"]
NicheAlertKind = Literal["sell_through_jump", "new_hot_niche"]


@dataclass(frozen=True, slots=True)
class ListingAlert:
    """A listing's alert: new, a deal, a price drop. `niche` is the price book's view of the
    listing's niche (None: not read in this poll), `buy_below` what to pay (None: no price to
    go by)."""

    KINDS: ClassVar[frozenset[NotifyKind]] = frozenset(get_args(ListingAlertKind))

    listing: Mapping[str, Any]
    niche: Mapping[str, Any] | None
    reason: str
    figures: Figures
    buy_below: Mapping[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "listing": dict(self.listing),
            "niche": None if self.niche is None else dict(self.niche),
            "reason": self.reason,
            "figures": dict(self.figures),
            "buy_below": None if self.buy_below is None else dict(self.buy_below),
        }


@dataclass(frozen=True, slots=True)
class NicheAlert:
    """A whole niche's alert, as the analysis found it: its niche part, reason and figures."""

    KINDS: ClassVar[frozenset[NotifyKind]] = frozenset(get_args(NicheAlertKind))

    niche: Mapping[str, Any]
    reason: str
    figures: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"niche": dict(self.niche), "reason": self.reason, "figures": dict(self.figures)}


@dataclass(frozen=True, slots=True)
class MonitorErrorAlert:
    """A monitor gone to `error`: why, in words, and its state, which goes out inside the
    envelope's `monitor` part rather than beside it (`monitor_state`)."""

    KINDS: ClassVar[frozenset[NotifyKind]] = frozenset({"monitor_error"})

    reason: str
    status: MonitorStatus
    last_error: str | None
    explanation: str

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason}

    def monitor_state(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "last_error": self.last_error,
            "explanation": self.explanation,
        }


AlertBody = ListingAlert | NicheAlert | MonitorErrorAlert


@dataclass(frozen=True, slots=True)
class AlertDraft:
    """One alert to queue for one rule (on each of the rule's channels): its kind, its
    subject (the outbox's unique key with the rule and channel) and its body. `ValueError`
    when the body is not that kind's."""

    rule_id: str
    kind: NotifyKind
    subject: str
    body: AlertBody

    def __post_init__(self) -> None:
        if self.kind not in self.body.KINDS:
            raise ValueError(f"a {type(self.body).__name__} does not carry a {self.kind!r} alert")
