"""The billing operations the views compose: each takes what it acts on (`Billing`: the store,
the settings and the Stripe client; `Mailing` for the trial's link) from its handler."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

from api.backend import Mailing
from api.billing.fulfil import fulfil_subscription
from api.billing.gateway import BillingUnconfigured, StripeGateway
from api.billing.plans import TRIAL_PLAN, configured_plans
from api.billing.quotas import PlanLimits, limits_of, usage
from api.billing.schemas import BillingSummary, QuotasOut, UsageOut
from api.billing.signature import verify
from api.billing.state import Billing
from api.http.auth import Principal
from api.http.errors import ApiError, BadRequest, Conflict, Forbidden, NotFound, TooManyRequests
from api.http.security import new_secret
from api.mail import normalise_email
from store import (
    BillingAccountRecord,
    DatabaseUnavailable,
    NewCheckoutSession,
    NewTrialToken,
    PlanRecord,
    Store,
    StripeEventKey,
)

log = logging.getLogger(__name__)
HANDLED_EVENTS = frozenset(
    {
        "checkout.session.completed",
        "customer.subscription.created",
        "customer.subscription.updated",
        "customer.subscription.deleted",
        "invoice.paid",
        "invoice.payment_failed",
    }
)


async def start(billing: Billing) -> None:
    """At app start: open the Stripe client when a key is set, seed the plan catalogue.

    A database that is down at start-up must not stop the service (health answers 503
    meanwhile): seeding is then retried by the first billing request.
    """
    settings = billing.settings
    billing.state.gateway = StripeGateway(settings) if settings.stripe_secret_key else None
    billing.state.seeded = False  # each start seeds again: the configured plans may differ
    try:
        await ensure_plans(billing)
    except DatabaseUnavailable as err:
        log.warning("plans not seeded yet (%s); retried on the first billing request", err)


async def ensure_plans(billing: Billing) -> None:
    if not billing.state.seeded:
        await billing.store.billing.seed_plans(configured_plans(billing.settings))
        billing.state.seeded = True


async def stop(billing: Billing) -> None:
    gateway, billing.state.gateway = billing.state.gateway, None
    if gateway is not None:
        await gateway.aclose()


class NoCustomer(ApiError):
    status, code = 409, "no_customer"

    def __init__(self) -> None:
        super().__init__(
            "This workspace has no billing account yet",
            suggest=["Subscribe first: POST /api/billing/checkout"],
        )


class AlreadySubscribed(Conflict):
    code = "already_subscribed"

    def __init__(self) -> None:
        super().__init__(
            "This workspace already has an active subscription",
            suggest=["Change or cancel it in the billing portal: POST /api/billing/portal"],
        )


def _subscribed(account: BillingAccountRecord | None) -> bool:
    return (
        account is not None
        and account.source == "stripe"
        and account.status in {"active", "trialing", "past_due"}
    )


def quotas_out(limits: PlanLimits | PlanRecord) -> QuotasOut:
    """The quotas of a plan, or those a workspace is entitled to now (same-named fields)."""
    return QuotasOut.model_validate(limits, from_attributes=True)


async def summary(billing: Billing, workspace_id: str) -> BillingSummary:
    await ensure_plans(billing)
    store = billing.store
    account = await store.billing.account(workspace_id)
    plans = await store.billing.plans()
    limits = limits_of(account, plans, store.clock())
    plan = next((p for p in plans if account is not None and p.name == account.plan), None)
    used = await usage(workspace_id, store=store)
    return BillingSummary(
        plan=account.plan if account is not None else None,
        plan_title=plan.title if plan is not None else None,
        status=limits.status,
        source=account.source if account is not None else None,
        can_create=limits.can_create,
        trial_end=account.trial_end if account is not None else None,
        current_period_end=account.current_period_end if account is not None else None,
        cancel_at_period_end=bool(account and account.cancel_at_period_end),
        has_customer=bool(account and account.stripe_customer_id),
        quotas=quotas_out(limits),
        usage=UsageOut.model_validate(used, from_attributes=True),
    )


# -- checkout, portal, sync ------------------------------------------------------------------


async def checkout(billing: Billing, principal: Principal, plan_name: str) -> tuple[str, str]:
    """Create a subscription Checkout Session for the caller's workspace; (url, session id)."""
    stripe = billing.gateway()
    await ensure_plans(billing)
    plan = await billing.store.billing.plan(plan_name)
    if plan is None or not plan.purchasable or plan.stripe_price_id is None:
        raise BadRequest(
            f"No purchasable plan named '{plan_name}'",
            code="unknown_plan",
            suggest=["List plans: GET /api/billing/plans"],
        )
    account = await billing.store.billing.account(principal.workspace_id)
    if _subscribed(account):
        raise AlreadySubscribed()
    customer = account.stripe_customer_id if account is not None else None
    if customer is None:
        created = await stripe.create_customer(
            email=principal.email, workspace_id=principal.workspace_id, user_id=principal.user_id
        )
        # Two concurrent first checkouts: the first stored customer wins and both use it.
        customer = await billing.store.billing.set_customer(principal.workspace_id, created)
    base = billing.settings.public_url
    session = await stripe.create_checkout_session(
        customer=customer,
        price_id=plan.stripe_price_id,
        user_id=principal.user_id,
        workspace_id=principal.workspace_id,
        plan=plan.name,
        success_url=f"{base}/billing/success?session_id={{CHECKOUT_SESSION_ID}}",
        cancel_url=f"{base}/billing",
    )
    if not session.url:
        raise BadRequest("The payment provider returned no checkout address", code="bad_gateway")
    await billing.store.billing.add_checkout_session(
        NewCheckoutSession(
            session_id=session.id,
            workspace_id=principal.workspace_id,
            user_id=principal.user_id,
            plan=plan.name,
        )
    )
    return session.url, session.id


async def portal(billing: Billing, principal: Principal) -> str:
    stripe = billing.gateway()
    account = await billing.store.billing.account(principal.workspace_id)
    if account is None or account.stripe_customer_id is None:
        raise NoCustomer()
    return await stripe.create_portal_session(
        customer=account.stripe_customer_id, return_url=f"{billing.settings.public_url}/account"
    )


async def sync_checkout(billing: Billing, principal: Principal, session_id: str | None) -> str:
    """Synchronise the subscription of a completed Checkout Session of the caller.

    Only a session we created for this user and workspace is considered (else 404, so a
    stranger's id reveals nothing), and Stripe's copy must name the same user (client
    reference), workspace (metadata) and customer (else 403). Nothing changes on refusal.
    """
    stripe = billing.gateway()
    if session_id is None:
        stored = await billing.store.billing.latest_checkout_session(
            principal.workspace_id, principal.user_id
        )
    else:
        stored = await billing.store.billing.checkout_session(session_id)
    if (
        stored is None
        or stored.workspace_id != principal.workspace_id
        or stored.user_id != principal.user_id
    ):
        raise NotFound("checkout session")
    remote = await stripe.retrieve_checkout_session(stored.id)
    if remote is None:
        raise NotFound("checkout session")
    account = await billing.store.billing.account(principal.workspace_id)
    if (
        remote.client_reference_id != principal.user_id
        or remote.workspace_id != principal.workspace_id
        or account is None
        or remote.customer is None
        or remote.customer != account.stripe_customer_id
    ):
        log.warning("sync refused: session %s does not match its record", stored.id)
        raise Forbidden("This checkout session does not belong to you", code="forbidden")
    if not remote.paid or remote.subscription is None:
        raise Conflict(
            "The checkout is not complete yet",
            code="checkout_incomplete",
            suggest=["Finish the payment, then call this again"],
        )
    return await fulfil_subscription(
        billing.store,
        stripe,
        principal.workspace_id,
        remote.subscription,
        cause=f"sync {stored.id}",
        session_id=stored.id,
    )


# -- webhook ---------------------------------------------------------------------------------


async def receive_webhook(billing: Billing, payload: bytes, signature: str | None) -> str:
    """Verify, deduplicate and apply one Stripe event; returns the outcome."""
    secret = billing.settings.stripe_webhook_secret
    if not secret:
        raise BillingUnconfigured()
    verify(payload, signature, secret, billing.store.clock().timestamp())
    try:
        event = json.loads(payload)
        key = StripeEventKey(id=str(event["id"]), type=str(event["type"]))
        obj: dict[str, Any] = event["data"]["object"]
        if not isinstance(obj, dict) or not key.id or len(key.id) > 255:
            raise TypeError("data.object is not an object")
    except (ValueError, KeyError, TypeError) as err:
        raise BadRequest("The event is not a Stripe event", code="invalid_event") from err
    if key.type not in HANDLED_EVENTS:
        return "duplicate" if not await billing.store.billing.record_event(key) else "ignored"
    stripe = billing.gateway()
    workspace_id, subscription_id, session_id = await _target(billing.store, key, obj)
    if workspace_id is None or subscription_id is None:
        log.info("event %s (%s) names nothing of ours", key.id, key.type)
        return "duplicate" if not await billing.store.billing.record_event(key) else "ignored"
    return await fulfil_subscription(
        billing.store,
        stripe,
        workspace_id,
        subscription_id,
        cause=f"{key.type} {key.id}",
        event=key,
        session_id=session_id,
    )


def _id(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("id"), str):
        return str(value["id"])
    return None


async def _target(
    store: Store, key: StripeEventKey, obj: dict[str, Any]
) -> tuple[str | None, str | None, str | None]:
    """(workspace, subscription, checkout session) an event is about, if it is ours."""
    if key.type == "checkout.session.completed":
        stored = await store.billing.checkout_session(str(obj.get("id")))
        metadata = obj.get("metadata") or {}
        if (
            stored is None
            or obj.get("client_reference_id") != stored.user_id
            or metadata.get("workspace_id") != stored.workspace_id
        ):
            return None, None, None
        return stored.workspace_id, _id(obj.get("subscription")), stored.id
    customer = _id(obj.get("customer"))
    workspace_id = await store.billing.workspace_of_customer(customer) if customer else None
    if key.type.startswith("customer.subscription."):
        return workspace_id, _id(obj.get("id")), None
    # invoice.*: the subscription moved under parent.subscription_details in 2025 versions.
    subscription = _id(obj.get("subscription")) or _id(
        ((obj.get("parent") or {}).get("subscription_details") or {}).get("subscription")
    )
    return workspace_id, subscription, None


# -- trial -------------------------------------------------------------------------------------


class TrialUsed(Conflict):
    code = "trial_used"

    def __init__(self) -> None:
        super().__init__(
            "The free trial has already been used by this workspace or e-mail",
            suggest=["Subscribe: POST /api/billing/checkout"],
        )


async def start_trial(
    mailing: Mailing, principal: Principal, email: str, client_address: str
) -> None:
    """Mail `email` the link that starts the workspace's trial; `TooManyRequests` past five
    mails per window to the address or from `client_address` (shared with the reset and
    confirmation mails)."""
    email = normalise_email(email)
    account = await mailing.store.billing.account(principal.workspace_id)
    if _subscribed(account):
        raise AlreadySubscribed()
    if await mailing.store.billing.trial_taken(principal.workspace_id, email):
        raise TrialUsed()
    wait = max(mailing.limiter.hit(f"ip:{client_address}"), mailing.limiter.hit(f"to:{email}"))
    if wait > 0.0:
        raise TooManyRequests(wait, "Too many e-mails requested; wait before trying again")
    token = new_secret()
    hours = mailing.settings.trial_token_hours
    await mailing.store.billing.add_trial_token(
        NewTrialToken(
            token_hash=mailing.hasher.digest(token),
            workspace_id=principal.workspace_id,
            user_id=principal.user_id,
            email=email,
            expires_at=mailing.store.clock() + timedelta(hours=hours),
        )
    )
    await mailing.mailer.send(
        email,
        "Confirm your Nichescope trial",
        f"Confirm your e-mail to start your free {mailing.settings.trial_days}-day Nichescope "
        "trial (no payment card needed):\n"
        f"{mailing.settings.public_url}/billing/trial/confirm?token={token}\n\n"
        f"The link works once, within {hours} hours. If you did not ask for it, ignore it.\n",
    )


class TokenGone(ApiError):
    status = 410


async def confirm_trial(mailing: Mailing, token: str) -> tuple[str, Any]:
    token = token.strip()
    if not token or len(token) > 200:
        raise BadRequest("The trial link has no token", code="invalid_token")
    trial_end = mailing.store.clock() + timedelta(days=mailing.settings.trial_days)
    outcome, _workspace = await mailing.store.billing.confirm_trial(
        mailing.hasher.digest(token), trial_end=trial_end, plan=TRIAL_PLAN
    )
    if outcome == "started":
        return TRIAL_PLAN, trial_end
    if outcome == "unknown_token":
        raise BadRequest("This trial link is not valid", code="invalid_token")
    if outcome == "used_token":
        raise TokenGone("This trial link was already used", code="token_used")
    if outcome == "expired_token":
        raise TokenGone(
            "This trial link has expired",
            code="token_expired",
            suggest=["Ask for a new one: POST /api/billing/trial/start"],
        )
    if outcome == "subscribed":
        raise AlreadySubscribed()
    raise TrialUsed()
