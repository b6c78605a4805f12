"""Delivery of one channel's batch of notifications, one `SendResult` per attempt.

`deliver` never raises for a failed delivery; the result says what happened in words, whether
it is worth retrying, and how long the destination asked us to wait. Only cancellation
propagates: a batch cut short by it may have been partly delivered, which is safe because
delivery is at least once and every notification keeps its id (a webhook's `webhook-id`).

- webhook: one POST per notification, the stored payload as body, signed (Standard
  Webhooks); stops at the first failure (`delivered` lists what went before).
- telegram: one `sendMessage` (HTML) listing the whole batch.
- discord: one POST `?wait=true` with up to ten embeds.
- email: one message through the injected `mail(to, subject, body)`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import httpx
import trio

from ._answers import Answer, SendResult, classify, failed, post
from ._destinations import (
    DestinationRefused,
    check_discord_url,
    check_webhook_url_syntax,
    signing_secrets,
)
from ._messages import (
    DISCORD_EMBEDS,
    discord_message,
    email_text,
    telegram_fit,
    telegram_text,
    webhook_body,
)
from ._outbound import DEFAULT_TELEGRAM_API
from ._signing import BadSigningSecret, webhook_headers

SEND_TIMEOUT_SECONDS = 15.0  # one HTTP request, connection included
BATCH_TIMEOUT_SECONDS = 45.0  # a whole webhook batch (one POST each), below a 60 s claim
MAIL_TIMEOUT_SECONDS = 40.0  # SMTP's own socket timeout is 30 s

Mail = Callable[[str, str, str], Awaitable[object]]
"""`await mail(to, subject, body)`; raises when the message could not be handed over."""


class ChannelLike(Protocol):
    """What a sender needs of a channel (`store.ChannelRecord` has it)."""

    @property
    def id(self) -> str: ...

    @property
    def kind(self) -> str: ...


class NotificationLike(Protocol):
    """What a sender needs of a notification (`store.NotificationRecord` has it)."""

    @property
    def id(self) -> str: ...

    @property
    def payload(self) -> Mapping[str, Any]: ...


async def deliver(
    channel: ChannelLike,
    secrets: Mapping[str, Any],
    batch: Sequence[NotificationLike],
    http: httpx.AsyncClient,
    mail: Mail | None = None,
    *,
    telegram_api_base: str = DEFAULT_TELEGRAM_API,
    allow: Iterable[str] = (),
    send_timeout: float = SEND_TIMEOUT_SECONDS,
    batch_timeout: float = BATCH_TIMEOUT_SECONDS,
    mail_timeout: float = MAIL_TIMEOUT_SECONDS,
) -> SendResult:
    """Send `batch` to `channel` (its opened `secrets`, see `_destinations`) over `http` (the
    guarded client of `_outbound`); see the module doc. `allow` is the outbound allowlist:
    webhook and Discord URLs are re-checked against it (no DNS) before anything is sent.

    Raises only `trio.Cancelled`. Incomplete secrets, a refused URL or an unknown kind are
    permanent failures (nothing was sent)."""
    if not batch:
        return SendResult(True, None, None, None, False, ())
    try:
        if channel.kind == "webhook":
            return await _webhook(secrets, batch, http, allow, send_timeout, batch_timeout)
        if channel.kind == "telegram":
            return await _telegram(secrets, batch, http, telegram_api_base, send_timeout)
        if channel.kind == "discord":
            return await _discord(secrets, batch, http, allow, send_timeout)
        if channel.kind == "email":
            return await _email(secrets, batch, mail, mail_timeout)
    except DestinationRefused as err:
        return failed(err.reason, permanent=True)
    except (KeyError, BadSigningSecret) as err:
        # A box sealed by an older release, or by hand: retrying will not add the key.
        return failed(f"the channel's stored secrets are incomplete ({err!r})", permanent=True)
    return failed(f"unknown channel kind {channel.kind!r}", permanent=True)


def _ids(batch: Sequence[NotificationLike]) -> tuple[str, ...]:
    return tuple(notification.id for notification in batch)


# -- webhook -------------------------------------------------------------------------------------


async def _webhook(
    secrets: Mapping[str, Any],
    batch: Sequence[NotificationLike],
    http: httpx.AsyncClient,
    allow: Iterable[str],
    send_timeout: float,
    batch_timeout: float,
) -> SendResult:
    url = check_webhook_url_syntax(str(secrets["url"]), allow)
    keys = signing_secrets(secrets)
    who = f"the endpoint {httpx.URL(url).host}"
    delivered: list[str] = []
    last: SendResult | None = None
    with trio.move_on_after(batch_timeout) as scope:
        for notification in batch:
            body = webhook_body(notification.payload)
            # Signed at each attempt: the timestamp is "now", which receivers check against
            # their tolerance; the id stays the notification's, which they dedupe on.
            headers = {
                "content-type": "application/json",
                **webhook_headers(keys, notification.id, body),
            }
            answer = await post(
                http, url, content=body, headers=headers, who=who, send_timeout=send_timeout
            )
            if isinstance(answer, SendResult):
                return _with_delivered(answer, delivered)
            last = classify(answer, who=who, detail=_webhook_detail(answer))
            if not last.ok:
                return _with_delivered(last, delivered)
            delivered.append(notification.id)
    if scope.cancelled_caught:
        return failed(
            f"{who}: the batch ran out of time after {len(delivered)} of {len(batch)}",
            delivered=tuple(delivered),
        )
    assert last is not None
    return SendResult(True, last.status_code, None, None, False, tuple(delivered))


def _with_delivered(result: SendResult, delivered: list[str]) -> SendResult:
    return failed(
        result.error or "failed",
        status=result.status_code,
        retry_after=result.retry_after,
        permanent=result.permanent,
        delivered=tuple(delivered),
    )


def _webhook_detail(answer: Answer) -> str | None:
    text = answer.body[:200].decode("utf-8", errors="replace").strip()
    return " ".join(text.split()) or None


# -- Telegram ------------------------------------------------------------------------------------

_TELEGRAM_HINTS = {
    401: "the bot token is wrong",
    403: "the bot may not write to this chat (blocked, or not a member)",
    404: "the bot token is wrong",
}


async def _telegram(
    secrets: Mapping[str, Any],
    batch: Sequence[NotificationLike],
    http: httpx.AsyncClient,
    api_base: str,
    send_timeout: float,
) -> SendResult:
    token = str(secrets["bot_token"])
    chat_id = secrets["chat_id"]
    batch = batch[: telegram_fit([n.payload for n in batch])]  # the rest: the next message
    body = {
        "chat_id": chat_id,
        "text": telegram_text([n.payload for n in batch]),
        "parse_mode": "HTML",
        "disable_web_page_preview": True,
    }

    def scrub(text: str) -> str:  # the token is part of the URL; errors must not keep it
        return text.replace(token, "…")

    answer = await post(
        http,
        f"{api_base.rstrip('/')}/bot{token}/sendMessage",
        content=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        who="Telegram",
        send_timeout=send_timeout,
        scrub=scrub,
    )
    if isinstance(answer, SendResult):
        return answer
    data = answer.json()
    data = data if isinstance(data, dict) else {}
    found = data.get("parameters")
    parameters: Mapping[str, Any] = found if isinstance(found, dict) else {}
    retry_after = _seconds(parameters.get("retry_after"))
    description = data.get("description") if isinstance(data.get("description"), str) else None
    detail = _telegram_detail(answer.status, description, parameters)
    if 200 <= answer.status < 300 and data.get("ok") is not True:
        return failed(
            f"Telegram answered {answer.status} without ok: {detail}", status=answer.status
        )
    result = classify(answer, who="Telegram", detail=detail, retry_after=retry_after)
    return _all_or_none(result, batch)


def _telegram_detail(status: int, description: str | None, parameters: Mapping[str, Any]) -> str:
    """What went wrong, in Telegram's words where they say more than the status does."""
    if "migrate_to_chat_id" in parameters:
        return (
            f"the group became a supergroup; its chat id is now {parameters['migrate_to_chat_id']}"
        )
    if status in _TELEGRAM_HINTS and status != 403:
        return _TELEGRAM_HINTS[status]  # Telegram only repeats "Unauthorized" / "Not Found"
    said = (description or "").strip()[:300]
    head, sep, tail = said.partition(": ")
    if sep and head.lower() in {"bad request", "forbidden", "too many requests"}:
        said = tail  # the status already says it
    return said or _TELEGRAM_HINTS.get(status, "")


# -- Discord -------------------------------------------------------------------------------------


async def _discord(
    secrets: Mapping[str, Any],
    batch: Sequence[NotificationLike],
    http: httpx.AsyncClient,
    allow: Iterable[str],
    send_timeout: float,
) -> SendResult:
    url = check_discord_url(str(secrets["url"]), allow)
    token = url.rsplit("/", 1)[-1]
    batch = batch[:DISCORD_EMBEDS]  # one embed each; the rest go in the next message
    answer = await post(
        http,
        f"{url}?wait=true",  # 200 with the message rather than 204: the post is confirmed
        content=json.dumps(discord_message([n.payload for n in batch])).encode(),
        headers={"content-type": "application/json"},
        who="Discord",
        send_timeout=send_timeout,
        scrub=lambda text: text.replace(token, "…"),
    )
    if isinstance(answer, SendResult):
        return answer
    data = answer.json()
    data = data if isinstance(data, dict) else {}
    message = data.get("message") if isinstance(data.get("message"), str) else None
    detail = message
    if answer.status == 404:
        detail = f"{message or 'Unknown Webhook'} (the webhook was deleted)"
    elif answer.status == 401:
        detail = f"{message or 'Invalid Webhook Token'} (the webhook URL is wrong)"
    result = classify(
        answer, who="Discord", detail=detail, retry_after=_seconds(data.get("retry_after"))
    )
    return _all_or_none(result, batch)


# -- e-mail --------------------------------------------------------------------------------------


async def _email(
    secrets: Mapping[str, Any],
    batch: Sequence[NotificationLike],
    mail: Mail | None,
    mail_timeout: float,
) -> SendResult:
    if mail is None:
        return failed("e-mail is not set up on this service")
    text = email_text([n.payload for n in batch])
    try:
        with trio.fail_after(mail_timeout):
            await mail(str(secrets["to"]), text.subject, text.body)
    except trio.TooSlowError:
        return failed(f"the mail server did not take the message within {mail_timeout:g} s")
    except Exception as err:  # the mailer's own errors (MailUnavailable): retry later
        reason = getattr(err, "reason", None) or type(err).__name__
        return failed(f"the e-mail could not be sent ({reason})")
    return SendResult(True, None, None, None, False, _ids(batch))


# -- helpers -------------------------------------------------------------------------------------


def _all_or_none(result: SendResult, batch: Sequence[NotificationLike]) -> SendResult:
    """One message carried `batch` (what of the claimed batch it could hold): all of those
    delivered, or none."""
    if not result.ok:
        return result
    return SendResult(True, result.status_code, None, None, False, _ids(batch))


def _seconds(value: object) -> float | None:
    """A JSON `retry_after` (seconds, int or float) or None when absent or nonsense."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or value < 0 or value > 86400:  # NaN, negative, absurd
        return None
    return float(value)
