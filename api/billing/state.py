"""Billing's per-app state, and what the billing use cases act on (`Billing`)."""

from __future__ import annotations

from dataclasses import dataclass

from api.billing.gateway import BillingUnconfigured, StripeGateway
from api.settings import Settings
from store import Store


@dataclass
class BillingState:
    """The Stripe client, opened at start when a key is set, and whether the plan catalogue
    was seeded (retried by the first billing request when the database was down at start)."""

    gateway: StripeGateway | None = None
    seeded: bool = False


@dataclass(frozen=True, slots=True)
class Billing:
    store: Store
    settings: Settings
    state: BillingState

    def gateway(self) -> StripeGateway:
        """The Stripe client; `BillingUnconfigured` (503) when no key is set."""
        if self.state.gateway is None:
            raise BillingUnconfigured()
        return self.state.gateway
