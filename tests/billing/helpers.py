"""Helpers for billing tests over the real HTTP interface."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import trio_asyncio

from store import Store, open_store
from tests.billing.fake_stripe import FakeStripe
from tests.conftest import RunningService


async def me(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/api/auth/me")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def subscription(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/api/billing/subscription")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def checkout(client: httpx.AsyncClient, plan: str = "starter") -> str:
    response = await client.post("/api/billing/checkout", json={"plan": plan})
    assert response.status_code == 200, response.text
    return str(response.json()["session_id"])


async def subscribed(client: httpx.AsyncClient, fake: FakeStripe, plan: str = "starter") -> str:
    """Check out, pay on the fake and sync; returns the subscription id."""
    session_id = await checkout(client, plan)
    sub = fake.pay(session_id)
    response = await client.post("/api/billing/sync-checkout")
    assert response.status_code == 200, response.text
    return str(sub["id"])


@asynccontextmanager
async def service_store(service: RunningService) -> AsyncIterator[Store]:
    """A second Store on the running service's database (on a loop of the test's own)."""
    async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
        yield store
