"""`/api/billing/*`: plans, subscription, checkout, portal, sync, webhook, trial."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ValidationError
from quart import Blueprint, Response, request
from quart_schema import validate_querystring, validate_request, validate_response

from api.billing import actions as service
from api.billing.schemas import (
    CheckoutRequest,
    CheckoutResponse,
    PlanOut,
    PlansResponse,
    PortalResponse,
    SyncCheckoutRequest,
    SyncResponse,
    TrialConfirmResponse,
    TrialStartRequest,
    TrialStartResponse,
    WebhookResponse,
)
from api.http.auth import client_ip, current_principal
from api.http.errors import validation_errors, validation_problem
from api.http.openapi import operation
from api.services import services
from store import record_fields

blueprint = Blueprint("billing", __name__, url_prefix="/api/billing")


@blueprint.before_app_serving
async def _start() -> None:
    await service.start(services().billing)


@blueprint.after_app_serving
async def _stop() -> None:
    await service.stop(services().billing)


@blueprint.get("/plans")
@operation("listPlans")
@validate_response(PlansResponse, 200)
async def list_plans() -> PlansResponse:
    """Every plan with its price and quotas; `purchasable` plans can be bought at checkout."""
    billing = services().billing
    await service.ensure_plans(billing)
    plans = await billing.store.billing.plans()
    # A plan's record holds its quotas as fields of its own; the answer nests them.
    return PlansResponse(
        plans=[
            PlanOut.model_validate({**record_fields(p), "quotas": service.quotas_out(p)})
            for p in plans
        ]
    )


@blueprint.get("/subscription")
@operation("getSubscription")
async def get_subscription() -> dict[str, object]:
    """The workspace's plan, subscription status, trial end, period end, quotas and usage."""
    summary = await service.summary(services().billing, current_principal().workspace_id)
    return summary.model_dump(mode="json")


@blueprint.post("/checkout")
@operation("createCheckoutSession", errors=(409, 502))
@validate_request(CheckoutRequest)
@validate_response(CheckoutResponse, 200)
async def create_checkout_session(data: CheckoutRequest) -> CheckoutResponse:
    """Start a Stripe Checkout (subscription mode) for a plan; open `url` in the browser.

    503 `billing_unconfigured` without Stripe keys; 409 `already_subscribed` when the
    workspace has a live subscription (use the portal to change it).
    """
    url, session_id = await service.checkout(services().billing, current_principal(), data.plan)
    return CheckoutResponse(url=url, session_id=session_id)


@blueprint.post("/portal")
@operation("createPortalSession", errors=(409, 502))
@validate_response(PortalResponse, 200)
async def create_portal_session() -> PortalResponse:
    """A Stripe billing-portal address for the workspace's customer (409 `no_customer`)."""
    return PortalResponse(url=await service.portal(services().billing, current_principal()))


@blueprint.post("/sync-checkout")
@operation("syncCheckout", errors=(409, 502))
async def sync_checkout() -> Response | dict[str, object]:
    """After the payment redirect: synchronise the subscription of the caller's checkout.

    Optional JSON body `{"session_id": "cs_..."}`; by default the caller's latest session. A
    session that is not the caller's is refused (404 or 403) and nothing changes.
    """
    body = await request.get_json(silent=False) if await request.get_data() else None
    try:
        data = SyncCheckoutRequest.model_validate(body or {})
    except ValidationError as err:
        return validation_problem(validation_errors(err, "body"))
    principal = current_principal()
    billing = services().billing
    outcome = await service.sync_checkout(billing, principal, data.session_id)
    summary = await service.summary(billing, principal.workspace_id)
    return SyncResponse(outcome=outcome, subscription=summary).model_dump(mode="json")


@blueprint.post("/webhook")
@operation("receiveStripeWebhook", access="public")
@validate_response(WebhookResponse, 200)
async def receive_stripe_webhook() -> WebhookResponse:
    """Stripe events, authenticated by the `Stripe-Signature` header (HMAC-SHA-256 over the
    raw body, 300 s tolerance either way). Each event id has effect once."""
    raw = await request.get_data()
    payload = raw.encode() if isinstance(raw, str) else raw
    outcome = await service.receive_webhook(
        services().billing, payload, request.headers.get("Stripe-Signature")
    )
    return WebhookResponse(received=True, outcome=outcome)


@blueprint.post("/trial/start")
@operation("startTrial", errors=(409,))
@validate_request(TrialStartRequest)
@validate_response(TrialStartResponse, 200)
async def start_trial(data: TrialStartRequest) -> TrialStartResponse:
    """E-mail a confirmation link that starts the free trial (no payment card). Once per
    workspace and per e-mail (409 `trial_used`)."""
    await service.start_trial(services().mailing, current_principal(), str(data.email), client_ip())
    return TrialStartResponse(message="Check your inbox: the link starts your free trial")


class TrialConfirmQuery(BaseModel):
    token: str = ""


@blueprint.get("/trial/confirm")
@operation("confirmTrial", access="public", errors=(409, 410))
@validate_querystring(TrialConfirmQuery)
@validate_response(TrialConfirmResponse, 200)
async def confirm_trial(query_args: TrialConfirmQuery) -> TrialConfirmResponse:
    """Start the trial of the link's workspace. Empty or unknown token 400 `invalid_token`,
    used 410 `token_used`, expired 410 `token_expired`, trial taken 409 `trial_used`."""
    plan, trial_end = await service.confirm_trial(services().mailing, query_args.token)
    assert isinstance(trial_end, datetime)
    return TrialConfirmResponse(
        message="Your free trial has started", plan=plan, trial_end=trial_end
    )
