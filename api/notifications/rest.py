"""`/api/notifications/*`: channels, rules, test sends, the delivery log and the alerts.

Thin views over `actions`: every query is scoped to the caller's workspace (another
workspace's channel, rule or monitor is a 404, like one that does not exist). Tokens need
`read` for GET and `write` for the rest (`api/http/auth.py`). Secrets are never in an answer, but
the webhook signing secret once, when it is made (creation, rotation).
"""

from __future__ import annotations

from quart import Blueprint, Response
from quart_schema import validate_querystring, validate_request, validate_response

from api.accounts.schemas import ConfirmEmailRequest, MessageResponse
from api.email_links import proven_address
from api.http.auth import current_principal
from api.http.openapi import DELETED, operation
from api.notifications import actions
from api.notifications.schemas import (
    ChannelList,
    ChannelOut,
    CreateChannelRequest,
    CreatedChannel,
    DeliveriesQuery,
    DeliveryOut,
    DeliveryPage,
    NotificationOut,
    NotificationPage,
    NotificationsQuery,
    RotatedSecret,
    RuleIn,
    RuleList,
    RuleOut,
    RulesQuery,
    TestResult,
    UpdateChannelRequest,
)
from api.services import services
from store import Store, record_fields

blueprint = Blueprint("notifications", __name__, url_prefix="/api/notifications")
SHOWN_ONCE = "Copy the signing secret now: it is shown only in this answer."


def _workspace() -> str:
    return current_principal().workspace_id


def _store() -> Store:
    return services().store


@blueprint.get("/channels")
@operation("listNotificationChannels")
@validate_response(ChannelList, 200)
async def list_channels() -> ChannelList:
    """The workspace's channels with their masked destination and health."""
    channels = await actions.list_channels(_store(), _workspace())
    return ChannelList(channels=[actions.channel_out(c) for c in channels])


@blueprint.post("/channels")
@operation("createNotificationChannel", errors=(409,))
@validate_request(CreateChannelRequest)
@validate_response(CreatedChannel, 201)
async def create_channel(data: CreateChannelRequest) -> tuple[CreatedChannel, int]:
    """Add a destination. A webhook's signing secret (`whsec_...`) is in this answer only.

    422 `destination_refused` for a destination the service will not send to (a private or
    local address, a Discord URL that is not Discord's, a malformed bot token); 409
    `limit_reached` past 20 channels. An e-mail channel to any address but the caller's own
    confirmed one is `confirmed: false` until its recipient opens the link mailed to them
    (429 past five such mails to the address, or from the workspace, per window).
    """
    svc = services()
    principal = current_principal()
    proven = await proven_address(svc.store, principal.user_id) if data.kind == "email" else None
    created = await actions.create_channel(
        svc.mailing, principal.workspace_id, data, proven_email=proven
    )
    body = CreatedChannel(
        **actions.channel_out(created.record).model_dump(),
        signing_secret=created.signing_secret,
        warning=SHOWN_ONCE if created.signing_secret else None,
    )
    return body, 201


@blueprint.get("/channels/<id:channel_id>")
@operation("getNotificationChannel")
@validate_response(ChannelOut, 200)
async def get_channel(channel_id: str) -> ChannelOut:
    """One channel: masked destination, health, last error and last success."""
    return actions.channel_out(await actions.owned_channel(_store(), _workspace(), channel_id))


@blueprint.patch("/channels/<id:channel_id>")
@operation("updateNotificationChannel")
@validate_request(UpdateChannelRequest)
@validate_response(ChannelOut, 200)
async def update_channel(channel_id: str, data: UpdateChannelRequest) -> ChannelOut:
    """Rename, disable, or enable again (which clears its failing state)."""
    return actions.channel_out(
        await actions.update_channel(_store(), _workspace(), channel_id, data)
    )


@blueprint.delete("/channels/<id:channel_id>")
@operation("deleteNotificationChannel", success=DELETED)
async def delete_channel(channel_id: str) -> Response:
    """Delete the channel and its pending alerts; rules stop naming it. 204."""
    await actions.delete_channel(_store(), _workspace(), channel_id)
    return Response(b"", status=204)


@blueprint.post("/channels/<id:channel_id>/test")
@operation("testNotificationChannel", errors=(409,))
@validate_response(TestResult, 200)
async def test_channel(channel_id: str) -> TestResult:
    """Send a `test.ping` now and answer with the outcome (a failed delivery is a 200 with
    `ok` false and the reason in words); it is logged as a test delivery."""
    svc = services()
    outcome = await actions.send_test(svc.mailing, svc.test_limiter, _workspace(), channel_id)
    return TestResult.model_validate(outcome, from_attributes=True)


@blueprint.post("/channels/<id:channel_id>/send-confirmation")
@operation("sendNotificationChannelConfirmation", errors=(409,))
@validate_response(MessageResponse, 200)
async def send_confirmation(channel_id: str) -> MessageResponse:
    """Mail the recipient of an unconfirmed e-mail channel a new link (earlier ones stop
    working). 409 `not_an_email` or `already_confirmed`; 429 past five such mails to the
    address, or from the workspace, per window."""
    await actions.send_confirmation(services().mailing, _workspace(), channel_id)
    return MessageResponse(message="A new confirmation link is on its way to the recipient")


@blueprint.post("/confirm-email")
@operation("confirmNotificationChannel", access="public", errors=(410,))
@validate_request(ConfirmEmailRequest)
@validate_response(MessageResponse, 200)
async def confirm_channel(data: ConfirmEmailRequest) -> MessageResponse:
    """The recipient of an e-mail channel agrees to its alerts, with the link mailed to them
    (single-use, valid 48 hours): from now on alerts and tests may go to the address. 400
    `invalid_token` for a token never issued; 410 `token_used` or `token_expired`."""
    await actions.confirm_channel(services().mailing, data.token)
    return MessageResponse(message="Alerts may be sent to this address from now on")


@blueprint.post("/channels/<id:channel_id>/rotate-secret")
@operation("rotateNotificationChannelSecret", errors=(409,))
@validate_response(RotatedSecret, 200)
async def rotate_secret(channel_id: str) -> RotatedSecret:
    """A new signing secret for a webhook, in this answer only; the previous one keeps
    signing (a second signature in `webhook-signature`) for 24 hours. 409 `not_a_webhook`."""
    rotated = await actions.rotate_secret(_store(), services().settings, _workspace(), channel_id)
    return RotatedSecret(
        channel=actions.channel_out(rotated.record),
        signing_secret=rotated.signing_secret,
        previous_valid_until=rotated.previous_valid_until,
        warning=SHOWN_ONCE,
    )


@blueprint.get("/rules")
@operation("listNotificationRules")
@validate_querystring(RulesQuery)
@validate_response(RuleList, 200)
async def list_rules(query_args: RulesQuery) -> RuleList:
    """Every rule of the workspace, or with `monitor_id` that monitor's own rules."""
    rules = await actions.list_rules(_store(), _workspace(), query_args.monitor_id)
    return RuleList(rules=[actions.rule_out(r) for r in rules])


@blueprint.post("/rules")
@operation("createNotificationRule", errors=(409,))
@validate_request(RuleIn)
@validate_response(RuleOut, 201)
async def create_rule(data: RuleIn) -> tuple[RuleOut, int]:
    """Add a rule (a monitor's own, or with no `monitor_id` a workspace default). 404 for a
    monitor or channel that is not the workspace's; 409 `limit_reached` past 50 rules."""
    return actions.rule_out(await actions.create_rule(_store(), _workspace(), data)), 201


@blueprint.get("/rules/<id:rule_id>")
@operation("getNotificationRule")
@validate_response(RuleOut, 200)
async def get_rule(rule_id: str) -> RuleOut:
    return actions.rule_out(await actions.owned_rule(_store(), _workspace(), rule_id))


@blueprint.put("/rules/<id:rule_id>")
@operation("replaceNotificationRule")
@validate_request(RuleIn)
@validate_response(RuleOut, 200)
async def replace_rule(rule_id: str, data: RuleIn) -> RuleOut:
    """Replace the rule with the body (every field; omitted ones take their defaults)."""
    return actions.rule_out(await actions.replace_rule(_store(), _workspace(), rule_id, data))


@blueprint.delete("/rules/<id:rule_id>")
@operation("deleteNotificationRule", success=DELETED)
async def delete_rule(rule_id: str) -> Response:
    await actions.delete_rule(_store(), _workspace(), rule_id)
    return Response(b"", status=204)


@blueprint.get("/deliveries")
@operation("listNotificationDeliveries")
@validate_querystring(DeliveriesQuery)
@validate_response(DeliveryPage, 200)
async def list_deliveries(query_args: DeliveriesQuery) -> DeliveryPage:
    """The delivery log, newest first, 50 a page: each attempt's status code, latency and
    error in words (tests included, marked `test`)."""
    q = query_args
    found = await actions.list_deliveries(_store(), _workspace(), q.channel_id, q.page)
    return DeliveryPage(
        deliveries=[DeliveryOut.model_validate(record_fields(d)) for d in found.items],
        page=found.page,
        total=found.total,
        pages=found.pages,
    )


@blueprint.get("/notifications")
@operation("listNotifications")
@validate_querystring(NotificationsQuery)
@validate_response(NotificationPage, 200)
async def list_notifications(query_args: NotificationsQuery) -> NotificationPage:
    """The alerts written for the workspace (pending, delivered or failed), newest first,
    50 a page, each with the webhook body it carries (`payload`)."""
    q = query_args
    found = await actions.list_notifications(_store(), _workspace(), q.monitor_id, q.status, q.page)
    return NotificationPage(
        notifications=[NotificationOut.model_validate(record_fields(n)) for n in found.items],
        page=found.page,
        total=found.total,
        pages=found.pages,
    )
