"""Billing fixtures: the fake Stripe on loopback, a real SMTP server, the service wired to
both, and helpers to sign webhook payloads with the stripe package's own helper."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import stripe
import trio

from api.settings import Settings
from tests.api.helpers import signed_in
from tests.billing.fake_stripe import FakeStripe, serve_fake_stripe
from tests.conftest import RunningService, start_service
from tests.engine.fake_market import FakeMarket
from tests.smtp import SmtpInbox, smtp_server

STRIPE_KEY = "sk_test_nichescope"
WEBHOOK_SECRET = "whsec_test_nichescope"
PRICE_STARTER = "price_starter_test"
PRICE_PRO = "price_pro_test"


@pytest.fixture
def smtp() -> Iterator[tuple[SmtpInbox, int]]:
    with smtp_server() as served:
        yield served


@pytest.fixture
async def fake_stripe(nursery: trio.Nursery) -> AsyncIterator[FakeStripe]:
    fake, stop = await serve_fake_stripe(nursery, STRIPE_KEY)
    yield fake
    stop.set()


def billing_settings(settings: Settings, fake: FakeStripe, smtp_port: int | None) -> Settings:
    return settings.model_copy(
        update={
            "stripe_secret_key": STRIPE_KEY,
            "stripe_webhook_secret": WEBHOOK_SECRET,
            "stripe_api_base": fake.url,
            "stripe_price_starter": PRICE_STARTER,
            "stripe_price_pro": PRICE_PRO,
            "smtp_url": f"smtp://127.0.0.1:{smtp_port}" if smtp_port else "",
            "mail_from": "Nichescope <billing@nichescope.test>",
            "plan_quotas": {},  # billing tests check the plans' own quotas
        }
    )


@pytest.fixture
async def billing(
    settings: Settings,
    fake_stripe: FakeStripe,
    smtp: tuple[SmtpInbox, int],
    nursery: trio.Nursery,
) -> AsyncIterator[RunningService]:
    running, stop = await start_service(
        nursery, billing_settings(settings, fake_stripe, smtp[1]), FakeMarket()
    )
    yield running
    stop.set()


@pytest.fixture
async def client(billing: RunningService) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the billing service, signed in to an account of its own (no plan yet)."""
    async with billing.client() as signed:
        await signed_in(signed)
        yield signed


@pytest.fixture
def inbox(smtp: tuple[SmtpInbox, int]) -> SmtpInbox:
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
