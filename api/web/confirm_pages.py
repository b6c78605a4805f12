"""The pages of the links that prove an address: `/confirm-email` (the account's own, mailed
at registration), `/notifications/confirm` (an e-mail channel's recipient agrees to its
alerts), and the banner's "Send the link again".

A link lands on a page with a button; the link is spent by the button's POST, not by the
GET, so a mail scanner that opens links cannot use it up, and a person who never asked can
simply close the page. Both call the same actions as the JSON API, and a button that worked
answers 303 to its page saying so (`?notice=confirmed`), so a reload sends nothing again.
"""

from __future__ import annotations

from quart import Response, request

from api.accounts.confirmation import confirm_account, resend_account_confirmation
from api.http.auth import client_ip
from api.http.errors import ApiError
from api.notifications.actions import confirm_channel
from api.services import services
from api.web import csrf
from api.web._blueprint import blueprint
from api.web._render import page, see_other
from api.web._words import explain
from api.web.account_pages import signed_in_form

TEMPLATE = "email_confirm.html"


def _token() -> str:
    return request.args.get("token", "").strip()[:200]


def _done() -> bool:
    """Whether this is the page the button's POST redirected to once the link worked."""
    return request.args.get("notice") == "confirmed"


@blueprint.get("/confirm-email")
async def account_confirm_form() -> Response:
    return await page(TEMPLATE, purpose="account", token=_token(), done=_done(), error=None)


@blueprint.post("/confirm-email")
async def account_confirm() -> Response:
    await csrf.check("pre")
    try:
        await confirm_account(services().mailing, (await request.form).get("token", ""))
    except ApiError as err:
        return await page(TEMPLATE, status=err.status, purpose="account", error=explain(err))
    return see_other("/confirm-email?notice=confirmed")


@blueprint.post("/account/confirm-email/resend")
async def account_confirm_resend() -> Response:
    """The banner's button: a new link to the signed-in person's address."""
    who = await signed_in_form()
    try:
        await resend_account_confirmation(services().mailing, who, client_ip())
    except ApiError as err:  # too many mails, or a mail server that refused
        return see_other(
            f"/dashboard?notice={'confirm-wait' if err.status == 429 else 'confirm-failed'}"
        )
    return see_other("/dashboard?notice=confirm-sent")


@blueprint.get("/notifications/confirm")
async def channel_confirm_form() -> Response:
    return await page(TEMPLATE, purpose="channel", token=_token(), done=_done(), error=None)


@blueprint.post("/notifications/confirm")
async def channel_confirm() -> Response:
    await csrf.check("pre")
    try:
        await confirm_channel(services().mailing, (await request.form).get("token", ""))
    except ApiError as err:
        return await page(TEMPLATE, status=err.status, purpose="channel", error=explain(err))
    return see_other("/notifications/confirm?notice=confirmed")
