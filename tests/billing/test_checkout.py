"""Checkout, portal and sync over real sockets against the fake Stripe, on both databases."""

from __future__ import annotations

import httpx

from tests.api.helpers import assert_envelope, signed_in
from tests.billing.fake_stripe import FakeStripe
from tests.billing.helpers import checkout, me, subscribed, subscription
from tests.conftest import RunningService


async def test_plans_list_prices_and_quotas(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/billing/plans")
    assert response.status_code == 200
    plans = {p["name"]: p for p in response.json()["plans"]}
    assert list(plans) == ["trial", "starter", "pro"]
    assert plans["trial"]["purchasable"] is False
    assert plans["starter"]["purchasable"] and plans["pro"]["purchasable"]
    assert plans["pro"]["price_cents"] > plans["starter"]["price_cents"] > 0
    for plan in plans.values():
        assert set(plan["quotas"]) == {
            "active_monitors",
            "runs_per_day",
            "items_per_run",
            "min_poll_seconds",
        }
    assert plans["pro"]["quotas"]["active_monitors"] > plans["starter"]["quotas"]["active_monitors"]
    assert "price_starter_test" not in response.text  # price ids stay server-side


async def test_checkout_creates_a_session_bound_to_user_and_workspace(
    client: httpx.AsyncClient, fake_stripe: FakeStripe
) -> None:
    who = await me(client)
    response = await client.post("/api/billing/checkout", json={"plan": "starter"})
    assert response.status_code == 200, response.text
    body = response.json()
    again = await checkout(client, "pro")
    session = fake_stripe.sessions[body["session_id"]]
    assert body["url"] == session["url"]
    assert session["mode"] == "subscription"
    assert session["client_reference_id"] == who["user"]["id"]
    assert session["metadata"]["workspace_id"] == who["workspace"]["id"]
    assert session["subscription_data"]["metadata"]["workspace_id"] == who["workspace"]["id"]
    assert session["line_items"]["0"]["price"] == "price_starter_test"
    # The workspace's customer is created once and reused.
    assert len(fake_stripe.calls("POST", "/v1/customers")) == 1
    assert fake_stripe.sessions[again]["customer"] == session["customer"]
    customer = fake_stripe.customers[session["customer"]]
    assert customer["metadata"]["workspace_id"] == who["workspace"]["id"]


async def test_checkout_refuses_unknown_plans_and_bad_bodies(
    billing: RunningService, client: httpx.AsyncClient
) -> None:
    trial = await client.post("/api/billing/checkout", json={"plan": "trial"})
    unknown = await client.post("/api/billing/checkout", json={"plan": "gold"})
    extra = await client.post("/api/billing/checkout", json={"plan": "pro", "price": "p"})
    anonymous = await httpx.AsyncClient(base_url=billing.url).post(
        "/api/billing/checkout", json={"plan": "pro"}
    )
    assert_envelope(trial, 400, "unknown_plan")
    assert_envelope(unknown, 400, "unknown_plan")
    assert extra.status_code == 422
    assert_envelope(anonymous, 401, "unauthorized")


async def test_portal_needs_a_customer_then_answers_its_url(
    client: httpx.AsyncClient, fake_stripe: FakeStripe
) -> None:
    before = await client.post("/api/billing/portal")
    session_id = await checkout(client)
    after = await client.post("/api/billing/portal")
    assert_envelope(before, 409, "no_customer")
    assert after.status_code == 200, after.text
    portal = fake_stripe.calls("POST", "/v1/billing_portal/sessions")
    assert portal[-1]["customer"] == fake_stripe.sessions[session_id]["customer"]
    assert after.json()["url"].startswith(f"{fake_stripe.url}/portal/")


async def test_sync_after_payment_activates_the_plan_at_once(
    client: httpx.AsyncClient, fake_stripe: FakeStripe
) -> None:
    before = await subscription(client)
    session_id = await checkout(client, "pro")
    unpaid = await client.post("/api/billing/sync-checkout")
    fake_stripe.pay(session_id)
    synced = await client.post("/api/billing/sync-checkout", json={"session_id": session_id})
    again = await client.post("/api/billing/sync-checkout")
    who = await me(client)
    second_checkout = await client.post("/api/billing/checkout", json={"plan": "starter"})
    assert before["plan"] is None and before["can_create"] is False
    assert_envelope(unpaid, 409, "checkout_incomplete")
    assert synced.status_code == 200, synced.text
    assert synced.json()["outcome"] == "applied"
    assert again.json()["outcome"] == "unchanged"
    state = synced.json()["subscription"]
    assert state["plan"] == "pro" and state["status"] == "active" and state["can_create"]
    assert state["source"] == "stripe" and state["current_period_end"]
    assert state["quotas"]["active_monitors"] == 25
    assert state["usage"] == {"active_monitors": 0, "runs_today": 0}
    assert who["billing"]["plan"] == "pro" and who["billing"]["can_create"] is True
    assert_envelope(second_checkout, 409, "already_subscribed")


async def test_a_strangers_session_is_refused_and_nothing_changes(
    billing: RunningService, fake_stripe: FakeStripe
) -> None:
    async with billing.client() as owner, billing.client() as stranger:
        await signed_in(owner)
        await signed_in(stranger)
        session_id = await checkout(owner, "pro")
        fake_stripe.pay(session_id)
        stolen = await stranger.post("/api/billing/sync-checkout", json={"session_id": session_id})
        guessed = await stranger.post("/api/billing/sync-checkout", json={"session_id": "cs_nope"})
        none_yet = await stranger.post("/api/billing/sync-checkout")
        stranger_state = await subscription(stranger)
        owner_state = await subscription(owner)
    assert_envelope(stolen, 404, "not_found")
    assert_envelope(guessed, 404, "not_found")
    assert_envelope(none_yet, 404, "not_found")
    assert stranger_state["plan"] is None and stranger_state["has_customer"] is False
    assert owner_state["plan"] is None  # the owner has not synced yet: untouched too


async def test_a_session_whose_stripe_copy_names_someone_else_is_refused(
    client: httpx.AsyncClient, fake_stripe: FakeStripe
) -> None:
    session_id = await checkout(client, "pro")
    fake_stripe.pay(session_id)
    fake_stripe.sessions[session_id]["client_reference_id"] = "usr_someone_else"
    wrong_user = await client.post("/api/billing/sync-checkout")
    fake_stripe.sessions[session_id]["client_reference_id"] = (await me(client))["user"]["id"]
    fake_stripe.sessions[session_id]["metadata"]["workspace_id"] = "ws_someone_else"
    wrong_workspace = await client.post("/api/billing/sync-checkout")
    state = await subscription(client)
    assert_envelope(wrong_user, 403, "forbidden")
    assert_envelope(wrong_workspace, 403, "forbidden")
    assert state["plan"] is None and state["can_create"] is False


async def test_billing_without_stripe_keys_is_a_clear_error(service: RunningService) -> None:
    async with service.client() as client:
        await signed_in(client)
        plans = await client.get("/api/billing/plans")
        response = await client.post("/api/billing/checkout", json={"plan": "starter"})
        portal = await client.post("/api/billing/portal")
        hook = await client.post("/api/billing/webhook", content=b"{}")
    assert plans.status_code == 200
    assert_envelope(response, 503, "billing_unconfigured")
    assert_envelope(portal, 503, "billing_unconfigured")
    assert_envelope(hook, 503, "billing_unconfigured")


async def test_subscribed_helper_works(client: httpx.AsyncClient, fake_stripe: FakeStripe) -> None:
    sub_id = await subscribed(client, fake_stripe)
    state = await subscription(client)
    assert fake_stripe.subscriptions[sub_id]["status"] == "active"
    assert state["plan"] == "starter"
