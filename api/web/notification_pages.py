"""`/notifications`: the workspace's channels (add, test, enable/disable, delete, rotate a
webhook's secret), the recent alerts with their reasons, and the recent delivery log.

Each form posts to a view that calls `api.notifications.actions`, like the JSON API, and
answers 303 to `/notifications`. A webhook's signing secret and a test's outcome reach that
page in the sealed one-shot cookie of `flash` (never in a URL): shown once, gone on reload.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from quart import Response, request

from api.email_links import proven_address
from api.http.auth import Principal
from api.http.errors import ApiError
from api.notifications import actions
from api.notifications.schemas import CreateChannelRequest, UpdateChannelRequest
from api.services import services
from api.web import flash
from api.web._blueprint import blueprint
from api.web._render import page, see_other
from api.web._words import explain
from api.web.account_pages import signed_in, signed_in_form
from engine.notifications import LABELS

KIND_WORDS = {
    "email": "E-mail",
    "webhook": "Webhook",
    "telegram": "Telegram",
    "discord": "Discord",
}
NOTICES = {
    "added": "The channel was added. Send a test to check that messages arrive.",
    "enabled": "The channel is on again.",
    "disabled": "The channel is turned off: nothing is sent to it until you turn it on.",
    "deleted": "The channel was deleted. Rules no longer send to it.",
    "confirm-sent": "A link is on its way to that address: alerts go there once its "
    "recipient opens it.",
}
FIELD_WORDS = {
    "name": "Give the channel a name of 1 to 100 characters.",
    "email": "Enter an e-mail address such as alerts@example.com.",
    "url": "Paste the address the service gave you, starting with https://.",
    "bot_token": "Paste the bot token @BotFather gave you (123456789:AA…).",
    "chat_id": "Enter the chat id (a number) or the channel's @name.",
}
FORM_FIELDS = ("kind", "name", "url", "email", "bot_token", "chat_id")
PAGE = "/notifications"
STATUS_WORDS = {"pending": "Waiting", "delivered": "Sent", "failed": "Not sent"}


def _alert_line(payload: dict[str, Any]) -> dict[str, Any]:
    """What an alert was about, in the words a reseller reads: what, which listing or niche
    (and its link, only ever http(s)), its price, and why."""
    item = payload.get("listing") or {}
    niche = payload.get("niche") or {}
    monitor = payload.get("monitor") or {}
    url = item.get("url") if isinstance(item.get("url"), str) else None
    return {
        "label": LABELS.get(str(payload.get("type")), str(payload.get("type"))),
        "title": (item.get("title") or f"Listing {item.get('item_id')}")
        if item
        else niche.get("label") or monitor.get("label") or "",
        "url": url if url and url.startswith(("https://", "http://")) else None,
        "price": item.get("price"),
        "currency": item.get("currency"),
        "reason": payload.get("reason") or "",
        "monitor": monitor.get("label") or monitor.get("id") or "",
    }


async def _notifications_page(who: Principal, *, status: int = 200, **context: Any) -> Response:
    svc = services()
    channels = await actions.list_channels(svc.store, who.workspace_id)
    log = await actions.list_deliveries(svc.store, who.workspace_id, None, 1)
    alerts = await actions.list_notifications(svc.store, who.workspace_id, None, None, 1)
    context.setdefault("form", {})
    context.setdefault("errors", {})
    return await page(
        "notifications.html",
        status=status,
        channels=channels,
        names={c.id: c.name for c in channels},
        deliveries=log.items[:25],
        alerts=[
            _alert_line(n.payload)
            | {"status": n.status, "channel_id": n.channel_id, "created_at": n.created_at}
            for n in alerts.items[:20]
        ],
        status_words=STATUS_WORDS,
        kinds=KIND_WORDS,
        max_channels=actions.MAX_CHANNELS,
        notices=NOTICES,
        **context,
    )


async def _refused(who: Principal, err: ApiError) -> Response:
    """The notifications page again, saying in words why `err` refused what was asked."""
    return await _notifications_page(who, status=err.status, error=explain(err))


@blueprint.get("/notifications")
async def notifications() -> Response:
    return await _notifications_page(await signed_in())


@blueprint.get("/app/notifications")
@blueprint.get("/alerts")  # what the navigation calls the page, typed by hand
async def notifications_alias() -> Response:
    return see_other("/notifications")


def _form_errors(err: ValidationError) -> dict[str, str]:
    errors: dict[str, str] = {}
    for problem in err.errors(include_url=False):
        field = str(problem["loc"][0]) if problem["loc"] else "form"
        if field in FIELD_WORDS:
            errors.setdefault(field, FIELD_WORDS[field])
        else:  # the kind's needed fields (a model rule): say which, in words
            errors.setdefault("form", str(problem["msg"]).removeprefix("Value error, ") + ".")
    return errors


@blueprint.post("/notifications/channels")
async def add_channel() -> Response:
    svc = services()
    who = await signed_in_form()
    form = await request.form
    values = {k: form.get(k, "").strip() for k in FORM_FIELDS}
    given = {k: v for k, v in values.items() if v and k in ("kind", "name", *_fields(values))}
    try:
        data = CreateChannelRequest.model_validate(given, strict=False)  # form text
    except ValidationError as err:
        return await _notifications_page(
            who, status=422, form=values, errors=_form_errors(err), open_kind=values["kind"]
        )
    try:
        proven = await proven_address(svc.store, who.user_id) if data.kind == "email" else None
        created = await actions.create_channel(
            svc.mailing, who.workspace_id, data, proven_email=proven
        )
    except ApiError as err:
        errors = {str(err.extra.get("field") or "form"): explain(err)}
        return await _notifications_page(
            who, status=err.status, form=values, errors=errors, open_kind=values["kind"]
        )
    if not created.record.confirmed:
        return see_other("/notifications?notice=confirm-sent")
    added = see_other("/notifications?notice=added")
    if created.signing_secret is None:
        return added
    return _with_secret(added, created.signing_secret, created.record.name)


def _with_secret(
    response: Response, secret: str, channel_name: str, previous_until: str | None = None
) -> Response:
    """`response`, a redirect to `/notifications`, showing the new signing secret there once."""
    return flash.carry(
        response,
        PAGE,
        secret=secret,
        secret_channel={"name": channel_name},
        previous_until=previous_until,
    )


def _fields(values: dict[str, str]) -> tuple[str, ...]:
    """The destination fields of the chosen kind (the four forms share field names)."""
    return {
        "email": ("email",),
        "webhook": ("url",),
        "discord": ("url",),
        "telegram": ("bot_token", "chat_id"),
    }.get(values.get("kind", ""), ())


@blueprint.post("/notifications/channels/<id:channel_id>/test")
async def test_channel(channel_id: str) -> Response:
    svc = services()
    who = await signed_in_form()
    try:
        outcome = await actions.send_test(
            svc.mailing, svc.test_limiter, who.workspace_id, channel_id
        )
    except ApiError as err:
        return await _refused(who, err)
    channel = await actions.owned_channel(svc.store, who.workspace_id, channel_id)
    outcome_shown = {"ok": outcome.ok, "message": outcome.message, "name": channel.name}
    return flash.carry(see_other(PAGE), PAGE, test_result=outcome_shown)


@blueprint.post("/notifications/channels/<id:channel_id>/send-confirmation")
async def send_channel_confirmation(channel_id: str) -> Response:
    who = await signed_in_form()
    try:
        await actions.send_confirmation(services().mailing, who.workspace_id, channel_id)
    except ApiError as err:
        return await _refused(who, err)
    return see_other("/notifications?notice=confirm-sent")


async def _switch(channel_id: str, enabled: bool) -> Response:
    who = await signed_in_form()
    await actions.update_channel(
        services().store, who.workspace_id, channel_id, UpdateChannelRequest(enabled=enabled)
    )
    return see_other(f"/notifications?notice={'enabled' if enabled else 'disabled'}")


@blueprint.post("/notifications/channels/<id:channel_id>/enable")
async def enable_channel(channel_id: str) -> Response:
    return await _switch(channel_id, True)


@blueprint.post("/notifications/channels/<id:channel_id>/disable")
async def disable_channel(channel_id: str) -> Response:
    return await _switch(channel_id, False)


@blueprint.post("/notifications/channels/<id:channel_id>/delete")
async def delete_channel(channel_id: str) -> Response:
    who = await signed_in_form()
    await actions.delete_channel(services().store, who.workspace_id, channel_id)
    return see_other("/notifications?notice=deleted")


@blueprint.post("/notifications/channels/<id:channel_id>/rotate")
async def rotate_secret(channel_id: str) -> Response:
    svc = services()
    who = await signed_in_form()
    try:
        rotated = await actions.rotate_secret(svc.store, svc.settings, who.workspace_id, channel_id)
    except ApiError as err:
        return await _refused(who, err)
    until = rotated.previous_valid_until.isoformat()
    return _with_secret(see_other(PAGE), rotated.signing_secret, rotated.record.name, until)
