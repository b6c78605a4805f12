"""Fulfilment: the one function that turns a Stripe subscription into a workspace's plan.

Webhook and sync both call `fulfil_subscription`. It reads the subscription from Stripe (the
source of truth, so events arriving out of order cannot roll a plan back), maps its price to
a plan and applies the result in one transaction (`store.billing.apply`), which
deduplicates the event id and writes the ledger only on a real change: a replay, 20
concurrent copies or a webhook racing a sync have exactly one effect.
"""

from __future__ import annotations

import logging

from api.billing.gateway import StripeGateway, SubscriptionView
from store import ApplyOutcome, Entitlement, PlanRecord, Store, StripeEventKey

log = logging.getLogger(__name__)


def entitlement_of(subscription: SubscriptionView, plans: list[PlanRecord]) -> Entitlement:
    plan = next(
        (p for p in plans if p.stripe_price_id and p.stripe_price_id == subscription.price_id),
        None,
    )
    if plan is None:
        log.warning(
            "subscription %s has price %s, which no plan has",
            subscription.id,
            subscription.price_id,
        )
    return Entitlement(
        plan=plan.name if plan is not None else None,
        status=subscription.status,
        source="stripe",
        stripe_subscription_id=subscription.id,
        current_period_end=subscription.current_period_end,
        cancel_at_period_end=subscription.cancel_at_period_end,
        trial_end=None,
    )


async def fulfil_subscription(
    store: Store,
    gateway: StripeGateway,
    workspace_id: str,
    subscription_id: str,
    *,
    cause: str,
    event: StripeEventKey | None = None,
    session_id: str | None = None,
) -> ApplyOutcome:
    """Apply the subscription's current state to the workspace; idempotent.

    Refuses (returns "ignored", recording the event) a subscription whose customer is not the
    workspace's, and an inactive subscription that is not the one the workspace has now (a
    late event about a replaced subscription must not cancel the new one).
    Raises `PaymentProviderError` if Stripe cannot be read; nothing is recorded then, so
    Stripe's retry of the webhook will try again.
    """
    subscription = await gateway.retrieve_subscription(subscription_id)
    account = await store.billing.account(workspace_id)
    if (
        subscription is None
        or account is None
        or account.stripe_customer_id is None
        or (subscription.customer != account.stripe_customer_id)
    ):
        log.warning("subscription %s does not belong to %s", subscription_id, workspace_id)
        return await _ignore(store, event)
    entitlement = entitlement_of(subscription, await store.billing.plans())
    replaced = (
        account.source == "stripe"
        and account.stripe_subscription_id not in (None, subscription.id)
        and account.status in {"active", "trialing", "past_due"}
    )
    if replaced and entitlement.status not in {"active", "trialing"}:
        return await _ignore(store, event)
    return await store.billing.apply(
        workspace_id, entitlement, cause=cause, event=event, session_id=session_id
    )


async def _ignore(store: Store, event: StripeEventKey | None) -> ApplyOutcome:
    if event is not None and not await store.billing.record_event(event):
        return "duplicate"
    return "ignored"
