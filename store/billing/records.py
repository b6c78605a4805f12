"""Records of the billing domain, in and out of the store."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from .._db.rows import to_record

# Stripe's subscription statuses plus our own "none" (never had a plan).
BillingStatus = str
BillingSource = Literal["stripe", "trial", "grant"]
ApplyOutcome = Literal["applied", "unchanged", "duplicate", "ignored"]
TrialOutcome = Literal[
    "started", "unknown_token", "used_token", "expired_token", "trial_used", "subscribed"
]


@dataclass(frozen=True, slots=True)
class PlanRecord:
    name: str
    title: str
    position: int
    stripe_price_id: str | None
    price_cents: int
    currency: str
    interval: str | None
    purchasable: bool
    active_monitors: int
    runs_per_day: int
    items_per_run: int
    min_poll_seconds: int


@dataclass(frozen=True, slots=True)
class Entitlement:
    """What a workspace should be entitled to; applying it is idempotent by construction."""

    plan: str | None
    status: BillingStatus
    source: BillingSource | None
    stripe_subscription_id: str | None = None
    current_period_end: datetime | None = None
    cancel_at_period_end: bool = False
    trial_end: datetime | None = None


@dataclass(frozen=True, slots=True)
class BillingAccountRecord:
    workspace_id: str
    plan: str | None
    status: BillingStatus
    source: BillingSource | None
    stripe_customer_id: str | None
    stripe_subscription_id: str | None
    current_period_end: datetime | None
    cancel_at_period_end: bool
    trial_end: datetime | None
    updated_at: datetime

    def entitlement(self) -> Entitlement:
        return to_record(Entitlement, self)


@dataclass(frozen=True, slots=True)
class NewCheckoutSession:
    """What recording a checkout session we created takes (`store.billing.add_checkout_session`)."""

    session_id: str
    workspace_id: str
    user_id: str
    plan: str


@dataclass(frozen=True, slots=True)
class NewTrialToken:
    """What storing an e-mailed trial confirmation takes (`store.billing.add_trial_token`):
    the keyed digest of the token, never the token."""

    token_hash: str
    workspace_id: str
    user_id: str
    email: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class CheckoutSessionRecord:
    id: str
    workspace_id: str
    user_id: str
    plan: str
    created_at: datetime
    fulfilled_at: datetime | None


@dataclass(frozen=True, slots=True)
class BillingChangeRecord:
    id: int
    workspace_id: str
    at: datetime
    cause: str
    plan: str | None
    status: BillingStatus


@dataclass(frozen=True, slots=True)
class StripeEventKey:
    id: str
    type: str
