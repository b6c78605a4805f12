"""The Stripe webhook over real sockets: forgeries refused, every event id has one effect,
a webhook racing a sync has one effect, cancellation takes the plan away."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
import trio

from api.billing.quotas import PlanRequired, plan_limits, require_quota
from tests.api.helpers import assert_envelope
from tests.billing.conftest import WEBHOOK_SECRET, deliver, event, signed
from tests.billing.fake_stripe import FakeStripe
from tests.billing.helpers import checkout, me, service_store, subscribed, subscription
from tests.conftest import RunningService


async def _changes(service: RunningService, workspace_id: str) -> list[Any]:
    # The service's own database, read through a second Store (on the test's asyncio loop).
    async with service_store(service) as store:
        return await store.billing.changes(workspace_id)


async def _paid_checkout(
    client: httpx.AsyncClient, fake: FakeStripe, plan: str = "starter"
) -> tuple[str, dict[str, Any]]:
    session_id = await checkout(client, plan)
    fake.pay(session_id)
    return session_id, fake.sessions[session_id]


async def at_once(times: int, *tasks: Callable[[], Awaitable[object]]) -> None:
    """Start each of `tasks` `times` times, all at once; return when all are done (60 s at most)."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for _ in range(times):
                for task in tasks:
                    nursery.start_soon(task)


@pytest.fixture
async def workspace_id(client: httpx.AsyncClient) -> str:
    """The signed-in account's workspace."""
    return str((await me(client))["workspace"]["id"])


async def test_forged_webhooks_are_refused_and_change_nothing(
    client: httpx.AsyncClient, fake_stripe: FakeStripe
) -> None:
    _, session = await _paid_checkout(client, fake_stripe)
    payload = event("checkout.session.completed", session)
    now = int(time.time())
    forgeries = {
        "bad secret": signed(payload, secret="whsec_not_the_secret"),
        # A minute past the 300 s tolerance either way: the server reads its clock later
        # than `now` was taken, and on a loaded machine a second later was enough to
        # bring `now + 301` inside the tolerance (a CI flake).
        "old": signed(payload, at=now - 360),
        "future": signed(payload, at=now + 360),
        "missing": {"Content-Type": "application/json"},
        "garbage": {"Stripe-Signature": "t=abc,v1=zz"},
        # A digit to `str.isdigit` that `int` refuses (this answered 500 once); header
        # bytes arrive as Latin-1, so b"\xb2" is read as "²".
        "superscript": {"Stripe-Signature": ("t=²,v1=" + "0" * 64).encode("latin-1")},
        "no v1": {"Stripe-Signature": f"t={now},v0=" + "0" * 64},
    }
    answers = {
        name: await client.post("/api/billing/webhook", content=payload, headers=headers)
        for name, headers in forgeries.items()
    }
    tampered_body = json.loads(payload)
    tampered_body["data"]["object"]["metadata"]["workspace_id"] = "ws_attacker"
    answers["tampered"] = await client.post(
        "/api/billing/webhook",
        content=json.dumps(tampered_body).encode(),
        headers=signed(payload),
    )
    state = await subscription(client)
    # Within the tolerance, either way, and with a second (rolled) v1 entry: accepted.
    header = signed(payload, at=now + 290)["Stripe-Signature"]
    rolled = f"{header.split(',')[0]},v1={'0' * 64},{header.split(',')[1]}"
    accepted = await client.post(
        "/api/billing/webhook",
        content=payload,
        headers={"Stripe-Signature": rolled, "Content-Type": "application/json"},
    )
    for name, response in answers.items():
        assert_envelope(response, 400, "invalid_signature"), name
    assert state["plan"] is None
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["outcome"] == "applied"


async def test_a_replayed_event_has_one_effect(
    billing: RunningService, client: httpx.AsyncClient, workspace_id: str, fake_stripe: FakeStripe
) -> None:
    _, session = await _paid_checkout(client, fake_stripe, "pro")
    payload = event("checkout.session.completed", session)
    first = await deliver(client, payload)
    second = await deliver(client, payload)
    state = await subscription(client)
    assert first.json() == {"received": True, "outcome": "applied"}
    assert second.json() == {"received": True, "outcome": "duplicate"}
    assert state["plan"] == "pro" and state["status"] == "active"
    assert len(await _changes(billing, workspace_id)) == 1


async def test_twenty_concurrent_copies_have_one_effect(
    billing: RunningService, client: httpx.AsyncClient, workspace_id: str, fake_stripe: FakeStripe
) -> None:
    _, session = await _paid_checkout(client, fake_stripe)
    outcomes: list[str] = []

    async def storm(payload: bytes) -> None:
        outcomes.clear()

        async def one() -> None:
            response = await deliver(client, payload)
            assert response.status_code == 200, response.text
            outcomes.append(response.json()["outcome"])

        await at_once(20, one)

    await storm(event("checkout.session.completed", session))
    assert sorted(outcomes) == ["applied"] + ["duplicate"] * 19
    assert (await subscription(client))["plan"] == "starter"

    # A failed renewal: Stripe marks the subscription past_due and tells us 20 times.
    fake_stripe.set_status(session["subscription"], "past_due")
    invoice = {
        "id": "in_test_1",
        "object": "invoice",
        "customer": session["customer"],
        "parent": {"subscription_details": {"subscription": session["subscription"]}},
    }
    await storm(event("invoice.payment_failed", invoice))
    assert sorted(outcomes) == ["applied"] + ["duplicate"] * 19
    state = await subscription(client)
    assert state["status"] == "past_due" and state["can_create"] is False

    fake_stripe.set_status(session["subscription"], "active")
    paid = await deliver(client, event("invoice.paid", invoice | {"status": "paid"}))
    assert paid.json()["outcome"] == "applied"
    assert (await subscription(client))["can_create"] is True
    changes = await _changes(billing, workspace_id)
    assert [c.status for c in changes] == ["active", "past_due", "active"]


async def test_webhook_racing_sync_has_one_effect(
    billing: RunningService, client: httpx.AsyncClient, workspace_id: str, fake_stripe: FakeStripe
) -> None:
    _, session = await _paid_checkout(client, fake_stripe, "pro")
    payload = event("checkout.session.completed", session)
    outcomes: list[str] = []

    async def hook() -> None:
        response = await deliver(client, payload)
        outcomes.append(response.json()["outcome"])

    async def sync() -> None:
        response = await client.post("/api/billing/sync-checkout")
        assert response.status_code == 200, response.text
        outcomes.append(response.json()["outcome"])

    await at_once(5, hook, sync)
    state = await subscription(client)
    assert outcomes.count("applied") == 1
    assert state["plan"] == "pro" and state["status"] == "active"
    assert len(await _changes(billing, workspace_id)) == 1


async def test_cancelling_the_subscription_takes_the_quotas_away(
    billing: RunningService, client: httpx.AsyncClient, workspace_id: str, fake_stripe: FakeStripe
) -> None:
    sub_id = await subscribed(client, fake_stripe, "pro")
    async with service_store(billing) as store:
        assert (await plan_limits(workspace_id, store=store)).active_monitors == 25
        await require_quota(workspace_id, "active_monitors", 24, store=store)
    subscription_object = fake_stripe.cancel(sub_id)
    response = await deliver(client, event("customer.subscription.deleted", subscription_object))
    state = await subscription(client)
    who = await me(client)
    assert response.json()["outcome"] == "applied"
    assert state["status"] == "canceled" and state["can_create"] is False
    assert state["quotas"]["active_monitors"] == 0
    assert who["billing"]["can_create"] is False
    async with service_store(billing) as store:
        limits = await plan_limits(workspace_id, store=store)
        assert limits.can_create is False
        try:
            await require_quota(workspace_id, "active_monitors", 0, store=store)
        except PlanRequired as err:
            assert err.status == 403 and err.code == "plan_required"
        else:
            raise AssertionError("a cancelled workspace could still create")


async def test_events_about_strangers_or_unknown_kinds_are_ignored(
    client: httpx.AsyncClient, fake_stripe: FakeStripe
) -> None:
    _, session = await _paid_checkout(client, fake_stripe)
    unknown_session = dict(session, id="cs_not_ours")
    not_ours = await deliver(client, event("checkout.session.completed", unknown_session))
    other_kind = await deliver(client, event("charge.refunded", {"id": "ch_1"}))
    strange_customer = await deliver(
        client,
        event(
            "customer.subscription.updated",
            {"id": session["subscription"], "customer": "cus_unknown"},
        ),
    )
    broken = await client.post("/api/billing/webhook", content=b"[1, 2]", headers=signed(b"[1, 2]"))
    state = await subscription(client)
    assert not_ours.json()["outcome"] == "ignored"
    assert other_kind.json()["outcome"] == "ignored"
    assert strange_customer.json()["outcome"] == "ignored"
    assert_envelope(broken, 400, "invalid_event")
    assert state["plan"] is None
    assert WEBHOOK_SECRET not in state


async def test_late_or_stale_events_cannot_roll_the_plan_back(
    client: httpx.AsyncClient, fake_stripe: FakeStripe
) -> None:
    old_sub = await subscribed(client, fake_stripe, "starter")
    # A delayed "updated" event whose payload says past_due, while Stripe says active:
    # the payload is not trusted, the subscription as Stripe has it now is.
    stale = dict(fake_stripe.subscriptions[old_sub], status="past_due")
    late = await deliver(client, event("customer.subscription.updated", stale))
    assert late.json()["outcome"] == "unchanged"
    assert (await subscription(client))["status"] == "active"
    # The customer moves to a new subscription; the old one's cancellation arrives after.
    fake_stripe.cancel(old_sub)
    response = await client.post("/api/billing/checkout", json={"plan": "pro"})
    assert response.status_code == 409  # still active here until Stripe tells us
    new_session = dict(fake_stripe.sessions[next(iter(fake_stripe.sessions))])
    new_sub = fake_stripe.pay(new_session["id"])  # reuse the session shape: a new sub
    created = await deliver(client, event("customer.subscription.created", new_sub))
    assert created.json()["outcome"] == "applied"
    old_cancelled = await deliver(
        client, event("customer.subscription.deleted", fake_stripe.subscriptions[old_sub])
    )
    state = await subscription(client)
    assert old_cancelled.json()["outcome"] == "ignored"
    assert state["status"] == "active" and state["can_create"] is True
