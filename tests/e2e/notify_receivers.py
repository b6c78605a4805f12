"""What the end-to-end notification tests receive with, and how they read what arrived.

- `WebhookReceiver`: a Standard Webhooks endpoint on loopback that verifies every request
  with the independent `standardwebhooks` package (signature, and the timestamp within its
  five minutes), answers 401 to anything that does not verify and 500 while told to fail.
  It counts each `webhook-id` once: a repeat is answered 204 (a receiver must, or the sender
  would keep retrying what already arrived) and noted apart in `repeats`.
  (tests/notify_fakes.py has a receiver that answers 409 to a repeat instead: right for a
  replay test, wrong here, where a legitimate redelivery would become a permanent failure.)
- Parsers turning what arrived into `(item_id, kind)` pairs: a webhook body says it in JSON;
  Telegram, Discord and e-mail say it in words and links, read here as a person would (the
  kind from its label, the listing from its link).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

import trio
from hypercorn.trio import serve
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.asgi import Receive, Scope, Send, lifespan, loopback_config, read_body, respond

Alert = tuple[int, str]  # (item_id, kind)

ITEM_URL = re.compile(r"/items/(\d+)")
KIND_OF_TYPE = {"listing.new": "new_listing", "listing.price_drop": "price_drop",
                "listing.deal": "deal"}  # fmt: skip
KIND_OF_LABEL = {"New listing": "new_listing", "Price drop": "price_drop", "Deal": "deal"}
CUT = "… and "  # how a message too small for its batch ends ("… and 3 more")


@dataclass(frozen=True, slots=True)
class Delivered:
    """One request the webhook receiver accepted, as it came."""

    headers: dict[str, str]
    body: bytes


async def _answer(send: Send, status: int, body: bytes = b"") -> None:
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await respond(send, status, headers, body)


@dataclass
class WebhookReceiver:
    """See the module doc. `secret` is set once the channel exists (its creation answer)."""

    path: str = "/hooks/nichescope"
    secret: str | None = None
    failing: bool = False
    url: str = ""
    accepted: dict[str, dict[str, Any]] = field(default_factory=dict)  # webhook-id -> body
    repeats: list[str] = field(default_factory=list)  # ids that came again after a 2xx
    refused: list[tuple[int, str]] = field(default_factory=list)  # (status, why)
    failures: int = 0  # 500s answered while failing
    genuine: list[Delivered] = field(default_factory=list)

    async def serve(self, *, task_status: trio.TaskStatus[str]) -> None:
        """Serve on a free loopback port; `task_status.started(url)` (the endpoint's URL)
        once listening; until cancelled."""
        config = loopback_config(graceful_timeout=0.5)
        async with trio.open_nursery() as nursery:
            binds: list[str] = await nursery.start(serve, self, config)  # type: ignore[arg-type]
            self.url = binds[0] + self.path
            task_status.started(self.url)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        body = await read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.secret is None or scope["method"] != "POST" or scope["path"] != self.path:
            self.refused.append((404, f"{scope['method']} {scope['path']}"))
            await _answer(send, 404)
            return
        try:
            payload = Webhook(self.secret).verify(body, headers)
        except (WebhookVerificationError, ValueError) as err:
            self.refused.append((401, str(err)))
            await _answer(send, 401, f"signature refused: {err}".encode())
            return
        if self.failing:
            self.failures += 1
            await _answer(send, 500, b"receiver down for maintenance")
            return
        msg_id = headers["webhook-id"]
        if msg_id in self.accepted:
            self.repeats.append(msg_id)
        else:
            self.accepted[msg_id] = payload
            self.genuine.append(Delivered(headers, body))
        await _answer(send, 204)

    def alerts(self) -> list[tuple[str, Alert]]:
        """(rule id, (item id, kind)) of each distinct notification accepted."""
        found: list[tuple[str, Alert]] = []
        for msg_id, payload in self.accepted.items():
            assert payload["id"] == msg_id, (msg_id, payload)
            kind = KIND_OF_TYPE[payload["type"]]
            found.append((payload["rule"]["id"], (int(payload["listing"]["item_id"]), kind)))
        return found


# -- what a person reads in each channel --------------------------------------------------------


def _item(text: str) -> int:
    match = ITEM_URL.search(text)
    assert match, f"no listing link in {text!r}"
    return int(match.group(1))


def telegram_alerts(message: Mapping[str, Any]) -> list[Alert]:
    """The alerts of one accepted `sendMessage` body (HTML blocks between blank lines)."""
    text = str(message["text"])
    assert CUT not in text, f"a Telegram message was cut, its last alerts unseen: {text[-300:]}"
    alerts: list[Alert] = []
    for block in text.split("\n\n"):
        label = re.match(r"<b>([^<]*)</b>", block)
        assert label, block
        alerts.append((_item(block), KIND_OF_LABEL[label.group(1)]))
    return alerts


def discord_alerts(message: Mapping[str, Any]) -> list[Alert]:
    """The alerts of one accepted webhook execution: one embed each, its footer opening with
    the kind ("Price drop · <monitor>")."""
    assert CUT not in str(message.get("content") or ""), f"a Discord message was cut: {message}"
    alerts: list[Alert] = []
    for embed in message["embeds"]:
        label = str(embed["footer"]["text"]).split(" · ", 1)[0]
        alerts.append((_item(str(embed["url"])), KIND_OF_LABEL[label]))
    return alerts


def email_alerts(message: EmailMessage) -> list[Alert]:
    """The alerts of one e-mail: sections separated by a `----` line, each opening with the
    kind ("New listing — <monitor>") and holding the listing's link."""
    text = str(message.get_content()).replace("\r\n", "\n")  # type: ignore[attr-defined]
    body = text.split("\n-- \n", 1)[0]
    alerts: list[Alert] = []
    for section in body.strip().split("\n\n----\n\n"):
        label = section.split("\n", 1)[0].split(" — ", 1)[0].strip()
        alerts.append((_item(section), KIND_OF_LABEL[label]))
    return alerts
