"""Billing pages: plans and quotas, trial start, checkout redirect, return page, portal."""

from __future__ import annotations

from typing import Any

from quart import Response, request

from api.billing import actions as service
from api.http.auth import client_ip
from api.http.errors import ApiError
from api.services import services
from api.web import csrf, flash
from api.web._blueprint import blueprint
from api.web._render import page, see_other
from api.web._words import explain
from api.web.account_pages import signed_in, signed_in_form

TRIAL_CONFIRM = "/billing/trial/confirm"
NOTICES = {
    "trial-sent": "Check your inbox: the link in the e-mail starts your free trial.",
    "cancelled": "The checkout was cancelled. Nothing was charged.",
}


def billing_configured() -> bool:
    return bool(services().settings.stripe_secret_key)


async def _billing_page(*, status: int = 200, **context: Any) -> Response:
    who = await signed_in()
    billing = services().billing
    await service.ensure_plans(billing)
    plans = await billing.store.billing.plans()
    return await page(
        "billing.html",
        status=status,
        plans=plans,
        summary=await service.summary(billing, who.workspace_id),
        configured=billing_configured(),
        **context,
    )


async def _refused(err: ApiError) -> Response:
    """The billing page again, saying in words why `err` refused what was asked."""
    return await _billing_page(status=err.status, error=explain(err))


@blueprint.get("/billing")
async def billing() -> Response:
    return await _billing_page(notices=NOTICES)


@blueprint.post("/billing/trial")
async def start_trial() -> Response:
    who = await signed_in_form()
    try:
        await service.start_trial(services().mailing, who, who.email, client_ip())
    except ApiError as err:
        return await _refused(err)
    return see_other("/billing?notice=trial-sent")


@blueprint.post("/billing/checkout")
async def checkout() -> Response:
    who = await signed_in_form()
    plan = (await request.form).get("plan", "")
    try:
        url, _session = await service.checkout(services().billing, who, plan)
    except ApiError as err:
        return await _refused(err)
    return see_other(url)


@blueprint.post("/billing/portal")
async def portal() -> Response:
    who = await signed_in_form()
    try:
        url = await service.portal(services().billing, who)
    except ApiError as err:
        return await _refused(err)
    return see_other(url)


@blueprint.get("/billing/success")
async def success() -> Response:
    """Stripe's return address: synchronise the subscription now (the webhook may lag)."""
    svc = services()
    who = await signed_in()
    session_id = request.args.get("session_id", "").strip()[:255] or None
    try:
        outcome = await service.sync_checkout(svc.billing, who, session_id)
    except ApiError as err:
        return await _refused(err)
    summary = await service.summary(svc.billing, who.workspace_id)
    return await page("billing_success.html", outcome=outcome, summary=summary)


@blueprint.get(TRIAL_CONFIRM)
async def trial_confirm_form() -> Response:
    """The e-mailed trial link lands here. The trial starts on the button's POST, not on
    this GET, so a mail scanner that opens links cannot use the single-use token up."""
    token = request.args.get("token", "").strip()[:200]
    started = request.args.get("notice") == "started"  # after the POST's redirect
    return await page("trial_confirm.html", token=token, started=started, error=None)


@blueprint.post(TRIAL_CONFIRM)
async def trial_confirm() -> Response:
    await csrf.check("pre")
    token = (await request.form).get("token", "")
    try:
        _plan, trial_end = await service.confirm_trial(services().mailing, token)
    except ApiError as err:
        return await page(
            "trial_confirm.html", status=err.status, token="", started=False, error=explain(err)
        )
    started = see_other(f"{TRIAL_CONFIRM}?notice=started")
    return flash.carry(started, TRIAL_CONFIRM, trial_end=trial_end.strftime("%d %B %Y"))
