"""Each sender against its fake over real loopback sockets, through the guarded client."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from engine.notifications import (
    Outgoing,
    SendResult,
    deliver,
    new_signing_secret,
    open_outbound,
    webhook_body,
    webhook_headers,
)
from scrapers import Resolver
from tests.notify_fakes import FakeDiscord, FakeTelegram, Reply, WebhookReceiver

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"


@dataclass(frozen=True)
class Channel:
    id: str
    kind: str


def alert(n: int, title: str = "Levi's 501") -> Outgoing:
    payload = {
        "type": "listing.deal",
        "version": 1,
        "id": f"ntf_{n}",
        "monitor": {"label": "Jeans"},
        "listing": {"title": f"{title} #{n}", "price": "12.00", "currency": "EUR",
                    "url": f"https://market.example/items/{n}"},
        "reason": "52% under the niche's median",
    }  # fmt: skip
    return Outgoing(f"ntf_{n}", payload)


@asynccontextmanager
async def client(
    *allow: str, telegram: str = "https://api.telegram.org", resolver: Resolver | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    async with open_outbound(allow, telegram_api_base=telegram, resolver=resolver) as http:
        yield http


# -- webhooks ----------------------------------------------------------------------------------


async def test_a_webhook_batch_arrives_signed_one_post_per_notification() -> None:
    secret = new_signing_secret()
    async with WebhookReceiver(secret) as receiver, client(receiver.url) as http:
        secrets = {"url": f"{receiver.url}/in", "signing_secret": secret}
        batch = [alert(1), alert(2)]
        result = await deliver(
            Channel("chn_1", "webhook"), secrets, batch, http, allow=[receiver.url]
        )
    assert result == SendResult(True, 204, None, None, False, ("ntf_1", "ntf_2"))
    assert [a.id for a in receiver.accepted] == ["ntf_1", "ntf_2"]
    assert receiver.accepted[0].body == webhook_body(batch[0].payload)
    assert receiver.rejected == []


async def test_a_failing_receiver_is_retried_and_recovers_and_replays_are_refused() -> None:
    secret = new_signing_secret()
    async with WebhookReceiver(secret) as receiver, client(receiver.url) as http:
        secrets = {"url": receiver.url + "/in", "signing_secret": secret}
        channel, allow = Channel("chn_1", "webhook"), [receiver.url]
        receiver.failing_status = 500
        down = await deliver(channel, secrets, [alert(1)], http, allow=allow)
        assert (down.ok, down.status_code, down.permanent) == (False, 500, False)
        assert down.error is not None and "500 Internal Server Error" in down.error
        receiver.failing_status = None
        up = await deliver(channel, secrets, [alert(1), alert(2)], http, allow=allow)
        assert up.ok and up.delivered == ("ntf_1", "ntf_2")
        # The same notification again is a replay for this receiver (same webhook-id).
        again = await deliver(channel, secrets, [alert(1)], http, allow=allow)
        # A hand-made forgery and a stale, correctly signed message are refused too.
        body = b'{"type":"test.ping"}'
        forged = webhook_headers(new_signing_secret(), "ntf_x", body)
        stale = webhook_headers(secret, "ntf_y", body, timestamp=int(time.time()) - 3600)
        for headers in (forged, stale):
            answer = await http.post(receiver.url + "/in", content=body, headers=headers)
            assert answer.status_code == 401
    assert [a.id for a in receiver.accepted] == ["ntf_1", "ntf_2"]
    assert [reason for reason, _ in receiver.rejected] == ["replayed", "signature", "timestamp"]
    assert (again.ok, again.status_code, again.permanent) == (False, 409, True)


async def test_a_batch_failing_part_way_says_what_was_delivered() -> None:
    secret = new_signing_secret()
    async with WebhookReceiver(secret) as receiver, client(receiver.url) as http:
        receiver.answer_next(Reply(200))
        receiver.fail_next(1, status=503)
        secrets = {"url": receiver.url + "/in", "signing_secret": secret}
        batch = [alert(1), alert(2), alert(3)]
        result = await deliver(Channel("c", "webhook"), secrets, batch, http, allow=[receiver.url])
    assert (result.ok, result.status_code, result.delivered) == (False, 503, ("ntf_1",))
    assert len(receiver.requests) == 2  # the third was not tried after the failure


@pytest.mark.parametrize(
    ("status", "headers", "retry_after", "permanent"),
    [
        (429, (("retry-after", "30"),), 30.0, False),
        (503, (("retry-after", "HTTPDATE"),), 120.0, False),
        (408, (), None, False),
        (410, (), None, True),
        (400, (), None, True),
    ],
)
async def test_webhook_answers_are_classified(
    status: int, headers: tuple[tuple[str, str], ...], retry_after: float | None, permanent: bool
) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=121), usegmt=True)
    headers = tuple((k, when if v == "HTTPDATE" else v) for k, v in headers)
    secret = new_signing_secret()
    async with WebhookReceiver(secret) as receiver, client(receiver.url) as http:
        receiver.answer_next(Reply(status, b"nope " * 30000, headers))  # a 150 kB answer
        secrets = {"url": receiver.url, "signing_secret": secret}
        result = await deliver(
            Channel("c", "webhook"), secrets, [alert(1)], http, allow=[receiver.url]
        )
    assert (result.ok, result.status_code, result.permanent) == (False, status, permanent)
    if retry_after is None:
        assert result.retry_after is None
    else:
        assert result.retry_after is not None and abs(result.retry_after - retry_after) < 3
    assert result.error is not None and len(result.error) < 400


async def test_redirects_are_never_followed() -> None:
    secret = new_signing_secret()
    async with WebhookReceiver(secret) as target, WebhookReceiver(secret) as receiver:
        receiver.redirect_to = target.url + "/in"
        async with client(receiver.url, target.url) as http:
            secrets = {"url": receiver.url + "/in", "signing_secret": secret}
            allow = [receiver.url, target.url]
            result = await deliver(Channel("c", "webhook"), secrets, [alert(1)], http, allow=allow)
    assert (result.ok, result.status_code) == (False, 302)
    assert result.error is not None and "redirect" in result.error and target.url in result.error
    assert target.requests == []


async def test_at_delivery_private_addresses_and_unlisted_origins_are_refused() -> None:
    secret = new_signing_secret()
    async with WebhookReceiver(secret) as receiver:
        port = receiver.url.rsplit(":", 1)[1]

        async def rebound(host: str, port: int) -> list[str]:
            return ["127.0.0.1"]  # public when the channel was made, loopback now

        async with client(resolver=rebound) as http:
            secrets = {"url": f"https://hooks.example.com:{port}/in", "signing_secret": secret}
            refused = await deliver(Channel("c", "webhook"), secrets, [alert(1)], http)
            # The allowlist no longer names the receiver: refused before any socket opens.
            secrets = {"url": receiver.url + "/in", "signing_secret": secret}
            unlisted = await deliver(Channel("c", "webhook"), secrets, [alert(1)], http)
    assert not refused.ok and refused.error is not None and "non-public" in refused.error
    assert unlisted.permanent and unlisted.error is not None and "https" in unlisted.error
    assert receiver.requests == []


# -- Telegram ----------------------------------------------------------------------------------


async def test_telegram_gets_one_html_message_per_batch() -> None:
    async with FakeTelegram(TOKEN) as telegram, client(telegram=telegram.url) as http:
        secrets = {"bot_token": TOKEN, "chat_id": -1001234}
        batch = [alert(1, "<script>x</script>"), alert(2), alert(3)]
        result = await deliver(
            Channel("c", "telegram"), secrets, batch, http, telegram_api_base=telegram.url
        )
    assert (
        result.ok and result.status_code == 200 and result.delivered == ("ntf_1", "ntf_2", "ntf_3")
    )
    [message] = telegram.messages
    assert message["chat_id"] == -1001234 and message["parse_mode"] == "HTML"
    assert message["disable_web_page_preview"] is True
    assert "&lt;script&gt;x&lt;/script&gt; #1" in message["text"]


async def test_telegram_sends_what_one_message_holds_and_leaves_the_rest() -> None:
    async with FakeTelegram(TOKEN) as telegram, client(telegram=telegram.url) as http:
        batch = [alert(n, title="A long title " * 8) for n in range(60)]
        result = await deliver(Channel("c", "telegram"), {"bot_token": TOKEN, "chat_id": 7},
                               batch, http, telegram_api_base=telegram.url)  # fmt: skip
    [message] = telegram.messages
    assert result.ok and 0 < len(result.delivered) < 60
    assert result.delivered == tuple(n.id for n in batch[: len(result.delivered)])
    text = str(message)
    assert "more" not in text  # nothing is only counted: what is not shown goes next
    assert f"#{len(result.delivered) - 1}" in text and f"#{len(result.delivered)}<" not in text


async def test_telegram_429_retry_after_5xx_401_and_timeouts() -> None:
    async with FakeTelegram(TOKEN) as telegram, client(telegram=telegram.url) as http:
        channel, secrets = Channel("c", "telegram"), {"bot_token": TOKEN, "chat_id": 7}

        async def send(**kw: Any) -> SendResult:
            return await deliver(channel, kw.pop("secrets", secrets), [alert(1)], http,
                                 telegram_api_base=telegram.url, **kw)  # fmt: skip

        telegram.rate_limit(1, retry_after=7)
        limited = await send()
        telegram.fail_next(1, status=502)
        bad_gateway = await send()
        wrong = {"bot_token": "987654321:" + "B" * 35, "chat_id": 7}
        unauthorized = await send(secrets=wrong)
        telegram.hang_next(1)
        slow = await send(send_timeout=0.5)
        fine = await send()
    assert (limited.ok, limited.status_code, limited.retry_after) == (False, 429, 7.0)
    assert not limited.permanent
    assert (bad_gateway.status_code, bad_gateway.permanent) == (502, False)
    assert (unauthorized.status_code, unauthorized.permanent) == (401, True)
    assert unauthorized.error == "Telegram answered 401 Unauthorized: the bot token is wrong"
    assert slow == SendResult(False, None, None, "Telegram did not answer within 0.5 s")
    assert fine.ok and len(telegram.messages) == 1
    for result in (limited, bad_gateway, unauthorized, slow):
        assert TOKEN not in (result.error or "") and "B" * 35 not in (result.error or "")


async def test_an_unreachable_telegram_is_a_retryable_failure_in_words() -> None:
    async with FakeTelegram(TOKEN) as telegram:
        gone = telegram.url
    async with client(telegram=gone) as http:
        secrets = {"bot_token": TOKEN, "chat_id": 7}
        result = await deliver(Channel("c", "telegram"), secrets, [alert(1)], http,
                               telegram_api_base=gone)  # fmt: skip
    assert not result.ok and not result.permanent and result.status_code is None
    assert result.error is not None and result.error.startswith("could not reach Telegram")
    assert TOKEN not in result.error


# -- Discord -----------------------------------------------------------------------------------


async def test_discord_gets_the_ten_embeds_a_message_holds_and_says_so() -> None:
    async with FakeDiscord() as discord, client(discord.url) as http:
        secrets = {"url": discord.webhook_url}
        batch = [alert(n) for n in range(12)]
        result = await deliver(Channel("c", "discord"), secrets, batch, http, allow=[discord.url])
    # The two that did not fit are not delivered: they go in the next message.
    assert result.ok and result.status_code == 200
    assert result.delivered == tuple(n.id for n in batch[:10])
    [message] = discord.messages
    assert len(discord.embeds) == 10 and "content" not in message
    assert discord.embeds[0]["url"] == "https://market.example/items/0"
    assert discord.requests[0].query == {"wait": "true"}


async def test_discord_429_and_wrong_tokens() -> None:
    async with FakeDiscord() as discord, client(discord.url) as http:
        channel, allow = Channel("c", "discord"), [discord.url]
        discord.rate_limit(1, retry_after=1.5)
        limited = await deliver(
            channel, {"url": discord.webhook_url}, [alert(1)], http, allow=allow
        )
        bad_token = discord.webhook_url[:-4] + "XXXX"
        unauthorized = await deliver(channel, {"url": bad_token}, [alert(1)], http, allow=allow)
        deleted = f"{discord.url}/api/webhooks/1/{discord.token}"
        unknown = await deliver(channel, {"url": deleted}, [alert(1)], http, allow=allow)
    assert (limited.status_code, limited.retry_after, limited.permanent) == (429, 1.5, False)
    assert (unauthorized.status_code, unauthorized.permanent) == (401, True)
    assert (unknown.status_code, unknown.permanent) == (404, True)
    assert (
        unknown.error == "Discord answered 404 Not Found: Unknown Webhook (the webhook was deleted)"
    )
    assert discord.messages == []


# -- e-mail ------------------------------------------------------------------------------------


async def test_email_goes_through_the_injected_mailer_and_its_failures_are_retryable() -> None:
    sent: list[tuple[str, str, str]] = []

    async def mail(to: str, subject: str, body: str) -> None:
        sent.append((to, subject, body))

    class MailUnavailable(Exception):
        reason = "SMTPServerDisconnected"

    async def broken(to: str, subject: str, body: str) -> None:
        raise MailUnavailable()

    channel, secrets = Channel("c", "email"), {"to": "a@example.com"}
    async with client() as http:
        ok = await deliver(channel, secrets, [alert(1), alert(2)], http, mail)
        failed = await deliver(channel, secrets, [alert(1)], http, broken)
        unset = await deliver(channel, secrets, [alert(1)], http, None)
    assert ok.ok and ok.delivered == ("ntf_1", "ntf_2")
    [(to, subject, body)] = sent
    assert to == "a@example.com" and subject == "Nichescope · 2 alerts from Jeans"
    assert "Levi's 501 #2" in body
    assert failed == SendResult(
        False, None, None, "the e-mail could not be sent (SMTPServerDisconnected)"
    )
    assert not unset.ok and not unset.permanent


async def test_incomplete_secrets_and_unknown_kinds_fail_for_good() -> None:
    async with client() as http:
        missing = await deliver(Channel("c", "telegram"), {"chat_id": 1}, [alert(1)], http)
        unknown = await deliver(Channel("c", "pager"), {}, [alert(1)], http)
        empty = await deliver(Channel("c", "pager"), {}, [], http)
    assert missing.permanent and unknown.permanent and empty.ok
