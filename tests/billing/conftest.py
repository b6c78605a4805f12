"""Billing fixtures: the fake Stripe on loopback, a real SMTP server, the service wired to
both, and helpers to sign webhook payloads with the stripe package's own helper."""

from __future__ import annotations

import asyncio
import dataclasses
import email
import email.policy
import json
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import stripe
import trio
from aiosmtpd.controller import Controller

from api.settings import Settings
from tests.billing.fake_stripe import FakeStripe, serve_fake_stripe
from tests.conftest import RunningService, start_service
from tests.engine.fake_market import FakeMarket

STRIPE_KEY = "sk_test_nichescope"
WEBHOOK_SECRET = "whsec_test_nichescope"
PRICE_STARTER = "price_starter_test"
PRICE_PRO = "price_pro_test"


class Inbox:
    """aiosmtpd handler keeping every delivered message."""

    def __init__(self) -> None:
        self.messages: list[email.message.EmailMessage] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.messages.append(message)  # type: ignore[arg-type]
        return "250 Message accepted for delivery"

    def to(self, address: str) -> list[email.message.EmailMessage]:
        return [m for m in self.messages if m["To"] == address]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    port = _free_port()
    # A plain asyncio loop of its own: trio-asyncio's policy would hand the thread a loop it
    # cannot run there.
    loop = asyncio.SelectorEventLoop()
    controller = Controller(inbox, hostname="127.0.0.1", port=port, loop=loop)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()
        loop.close()


@pytest.fixture
async def fake_stripe(nursery: trio.Nursery) -> AsyncIterator[FakeStripe]:
    fake, stop = await serve_fake_stripe(nursery, STRIPE_KEY)
    yield fake
    stop.set()


def billing_settings(settings: Settings, fake: FakeStripe, smtp_port: int | None) -> Settings:
    return dataclasses.replace(
        settings,
        stripe_secret_key=STRIPE_KEY,
        stripe_webhook_secret=WEBHOOK_SECRET,
        stripe_api_base=fake.url,
        stripe_price_starter=PRICE_STARTER,
        stripe_price_pro=PRICE_PRO,
        smtp_url=f"smtp://127.0.0.1:{smtp_port}" if smtp_port else "",
        mail_from="Nichescope <billing@nichescope.test>",
        plan_quotas={},  # billing tests check the plans' own quotas
    )


@pytest.fixture
async def billing(
    settings: Settings,
    fake_stripe: FakeStripe,
    smtp: tuple[Inbox, int],
    nursery: trio.Nursery,
) -> AsyncIterator[RunningService]:
    running, stop = await start_service(
        nursery, billing_settings(settings, fake_stripe, smtp[1]), FakeMarket()
    )
    yield running
    stop.set()


@pytest.fixture
def inbox(smtp: tuple[Inbox, int]) -> Inbox:
    return smtp[0]


def event(kind: str, obj: dict[str, Any], event_id: str | None = None) -> bytes:
    return json.dumps(
        {
            "id": event_id or f"evt_{uuid.uuid4().hex}",
            "object": "event",
            "type": kind,
            "created": int(time.time()),
            "data": {"object": obj},
        }
    ).encode()


def signed(
    payload: bytes, *, secret: str = WEBHOOK_SECRET, at: int | None = None
) -> dict[str, str]:
    """Headers of a webhook signed the way Stripe signs (the stripe package's own helper)."""
    header = stripe.WebhookSignature.generate_signature_header(
        payload.decode(), secret, timestamp=int(time.time()) if at is None else at
    )
    return {"Stripe-Signature": header, "Content-Type": "application/json"}


async def deliver(client: httpx.AsyncClient, payload: bytes, **kwargs: Any) -> httpx.Response:
    return await client.post(
        "/api/billing/webhook", content=payload, headers=signed(payload, **kwargs)
    )
