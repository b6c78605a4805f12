"""Channel use cases: create (checked, sealed), list, update, delete, rotate a webhook's secret.

Shared by the REST views, the web pages and (for reads) the MCP tools. Each function takes the
caller's workspace id and raises the `ApiError`s the JSON API answers with; nothing here
builds a response. A destination's secrets are sealed (`SecretBox`, keyed by the service's
secret key) before they reach the store and are never handed back, except the webhook signing
secret, once, in the answer that made it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from api.backend import Mailing
from api.http.errors import ApiError, Conflict, deleted, found
from api.mail import MailUnavailable, normalise_email
from api.notifications._confirm import check_mail_allowance, mail_channel_confirmation
from api.notifications.schemas import ChannelOut, CreateChannelRequest, UpdateChannelRequest
from api.settings import Settings
from engine.notifications import (
    BadSecretBox,
    DestinationRefused,
    SecretBox,
    check_destination,
    rotate_signing_secret,
)
from store import ChannelRecord, NewChannel, QuotaFull, Store

log = logging.getLogger(__name__)

MAX_CHANNELS = 20
CHANNEL = "notification channel"  # what a 404 says is missing
ROTATION_HOURS = 24


class DestinationNotAccepted(ApiError):
    """A destination the service will not send to (private address, not Discord, ...)."""

    status, code = 422, "destination_refused"


class LimitReached(Conflict):
    code = "limit_reached"


def secret_box(settings: Settings) -> SecretBox:
    return SecretBox(settings.secret_key)


def channel_out(channel: ChannelRecord) -> ChannelOut:
    """What a channel shows: its hint and health, never its sealed secrets (the model reads
    only the attributes it names, and names none of them)."""
    return ChannelOut.model_validate(channel, from_attributes=True)


async def list_channels(store: Store, workspace_id: str) -> list[ChannelRecord]:
    return await store.notify.channels(workspace_id)


async def owned_channel(store: Store, workspace_id: str, channel_id: str) -> ChannelRecord:
    """The workspace's channel; `NotFound` for another workspace's (same as none)."""
    return found(await store.notify.channel(workspace_id, channel_id), CHANNEL)


@dataclass(frozen=True, slots=True)
class CreatedChannel:
    record: ChannelRecord
    signing_secret: str | None  # webhooks: shown once, in the answer that created it


def _given(data: CreateChannelRequest) -> dict[str, Any]:
    """The request's destination fields under the names the engine's checks read."""
    given: dict[str, Any] = {}
    if data.url is not None:
        given["url"] = data.url
    if data.email is not None:
        given["to"] = data.email
    if data.bot_token is not None:
        given["bot_token"] = data.bot_token
    if data.chat_id is not None:
        given["chat_id"] = data.chat_id
    return given


_FIELDS = {"to": "email"}


# What a refusal the operator's allowlist would lift adds: the setting's name, never what
# the host resolves to (`DestinationRefused.allowlist_opens`).
ALLOWLIST_WORDS = (
    "Only the operator of this service can allow such an address, by naming its origin "
    "(scheme://host:port) in the NICHESCOPE_OUTBOUND_ALLOW setting (meant for tests and demos)."
)


def refused(err: DestinationRefused) -> DestinationNotAccepted:
    """The 422 for `err`, the same words for the API, the Alerts page and agents."""
    field = _FIELDS.get(err.field or "", err.field)
    reason = err.reason[:1].upper() + err.reason[1:]
    message = reason if reason.endswith(".") else reason + "."
    if err.allowlist_opens:
        message += " " + ALLOWLIST_WORDS
    return DestinationNotAccepted(
        message,
        suggest=[
            "Webhooks need a public https address; Discord needs the webhook URL Discord "
            "gave (https://discord.com/api/webhooks/...); Telegram a bot token from "
            "@BotFather and a chat id"
        ],
        extra={"field": field} if field else None,
    )


def channels_full() -> LimitReached:
    return LimitReached(
        f"A workspace has at most {MAX_CHANNELS} notification channels",
        suggest=["Delete a channel you no longer use"],
        extra={"limit": MAX_CHANNELS},
    )


async def _add_within_limit(store: Store, new: NewChannel) -> ChannelRecord:
    """Store the channel unless the workspace has `MAX_CHANNELS`, counted with the insert
    (`store/accounts/quotas.py`): simultaneous creations all passed `create_channel`'s count."""
    try:
        return await store.notify.add_channel(new, at_most=MAX_CHANNELS)
    except QuotaFull as full:
        raise channels_full() from full


async def create_channel(
    mailing: Mailing,
    workspace_id: str,
    data: CreateChannelRequest,
    *,
    proven_email: str | None = None,
) -> CreatedChannel:
    """Check the destination, seal its secrets and store the channel. An e-mail channel to
    any address but `proven_email` (the caller's own, once they proved it) waits for its
    recipient, who is mailed a link (`_confirm`).

    Raises `LimitReached` (409) past `MAX_CHANNELS`, `DestinationNotAccepted` (422) for a
    destination the service will not send to, `TooManyRequests` past the confirmation mails
    an address or a workspace may get. The DNS look-up of a webhook host is the only thing
    that leaves the machine, bar that mail; cancellation propagates.
    """
    store, settings = mailing.store, mailing.settings
    if len(await store.notify.channels(workspace_id)) >= MAX_CHANNELS:
        raise channels_full()
    try:
        destination = await check_destination(
            data.kind, _given(data), allow=settings.outbound_allow
        )
    except DestinationRefused as err:
        raise refused(err) from err
    to = str(destination.secrets["to"]) if data.kind == "email" else None
    awaiting = to is not None and normalise_email(to) != proven_email
    if to is not None and awaiting:
        check_mail_allowance(mailing, workspace_id, to)
    record = await _add_within_limit(
        store,
        NewChannel(
            workspace_id=workspace_id,
            kind=data.kind,
            name=data.name,
            hint=destination.hint,
            secret_box=secret_box(settings).seal(destination.secrets),
            awaiting_confirmation=awaiting,
        ),
    )
    if to is not None and awaiting:
        await _mail_confirmation(mailing, record, to)
    secret = destination.secrets.get("signing_secret") if data.kind == "webhook" else None
    return CreatedChannel(record=record, signing_secret=secret)


async def _mail_confirmation(mailing: Mailing, channel: ChannelRecord, to: str) -> None:
    try:
        await mail_channel_confirmation(mailing, channel, to)
    except MailUnavailable as err:  # the channel stays, waiting; its owner asks again
        log.warning("confirmation of channel %s not mailed: %s", channel.id, err.reason)


async def send_confirmation(mailing: Mailing, workspace_id: str, channel_id: str) -> None:
    """Mail the recipient of an e-mail channel a new link (earlier ones stop working).

    Raises `NotFound`, `Conflict` (`not_an_email`, `already_confirmed`), `TooManyRequests`
    as `create_channel` does, `MailUnavailable` when the mail server refuses."""
    channel = await owned_channel(mailing.store, workspace_id, channel_id)
    if channel.kind != "email":
        raise Conflict(
            "Only e-mail channels wait for their recipient",
            code="not_an_email",
            suggest=["Send a test instead: POST /api/notifications/channels/{id}/test"],
        )
    if channel.confirmed_at is not None:
        raise Conflict("Its recipient confirmed this channel already", code="already_confirmed")
    to = str(open_secrets(mailing.settings, channel)["to"])
    check_mail_allowance(mailing, workspace_id, to)
    await mail_channel_confirmation(mailing, channel, to)


async def update_channel(
    store: Store, workspace_id: str, channel_id: str, data: UpdateChannelRequest
) -> ChannelRecord:
    """Rename, enable (which clears a disabled reason and failing state) or disable."""
    updated = await store.notify.update_channel(
        workspace_id, channel_id, name=data.name, enabled=data.enabled
    )
    return found(updated, CHANNEL)


async def delete_channel(store: Store, workspace_id: str, channel_id: str) -> None:
    """Delete the channel, its pending alerts, and its id from every rule."""
    deleted(await store.notify.delete_channel(workspace_id, channel_id), CHANNEL)


def open_secrets(settings: Settings, channel: ChannelRecord) -> dict[str, Any]:
    """The channel's secrets; `Conflict` (`secrets_unreadable`) when sealed under another key."""
    try:
        return secret_box(settings).open(channel.secret_box)
    except BadSecretBox as err:
        raise Conflict(
            "This channel's secrets cannot be read (the service's secret key changed)",
            code="secrets_unreadable",
            suggest=["Delete the channel and add it again"],
        ) from err


@dataclass(frozen=True, slots=True)
class RotatedSecret:
    record: ChannelRecord
    signing_secret: str
    previous_valid_until: datetime


async def rotate_secret(
    store: Store, settings: Settings, workspace_id: str, channel_id: str
) -> RotatedSecret:
    """A new signing secret for a webhook channel; the previous one keeps signing (a second
    signature) for 24 hours so the receiver can switch. `Conflict` (`not_a_webhook`) for
    other kinds."""
    channel = await owned_channel(store, workspace_id, channel_id)
    if channel.kind != "webhook":
        raise Conflict(
            "Only webhook channels have a signing secret",
            code="not_a_webhook",
            suggest=["Rotate the secret of a webhook channel"],
        )
    rotated = rotate_signing_secret(
        open_secrets(settings, channel), overlap_seconds=ROTATION_HOURS * 3600.0
    )
    updated = await store.notify.update_channel(
        workspace_id, channel_id, secret_box=secret_box(settings).seal(rotated)
    )
    return RotatedSecret(
        record=found(updated, CHANNEL),
        signing_secret=str(rotated["signing_secret"]),
        previous_valid_until=datetime.fromtimestamp(int(rotated["previous_until"]), UTC),
    )
