"""`/api/notifications/*` channels over HTTP: CRUD by session and by token, workspace
scoping, secrets never shown after creation, SSRF refusals, a real test delivery to a
loopback webhook receiver (signed, and signed twice after a rotation)."""

from __future__ import annotations

import json

import httpx
import trio
from standardwebhooks import Webhook

from api.settings import Settings
from tests.api.helpers import assert_envelope, assert_invalid, bearer, create_token, signed_in
from tests.api.notify_receiver import Receiver, start_receiver
from tests.conftest import RunningService, ServiceClient, start_service
from tests.engine.fake_market import FakeMarket

BOT_TOKEN = "123456789:" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
DISCORD_TOKEN = "x" * 30 + "Zq9z"
EVIL_DISCORD = "https://evil.example/api/webhooks/1/" + "a" * 30


async def _service(
    settings: Settings, nursery: trio.Nursery
) -> tuple[RunningService, Receiver, trio.Event]:
    receiver = await start_receiver(nursery)
    allowed = settings.model_copy(update={"outbound_allow": (receiver.origin,)})
    service, stop = await start_service(nursery, allowed, FakeMarket())
    return service, receiver, stop


def _shown(*responses: httpx.Response) -> str:
    return "\n".join(json.dumps(r.json()) if r.content else "" for r in responses)


async def test_channels_by_session_and_token_scoped_and_secret(
    settings: Settings, nursery: trio.Nursery
) -> None:
    service, receiver, stop = await _service(settings, nursery)
    async with service.client() as owner, service.client() as stranger:
        await signed_in(owner)
        await signed_in(stranger)
        base = "/api/notifications/channels"
        hook_url = f"{receiver.origin}/hooks/abcdef123456"
        hook = await owner.post(base, json={"kind": "webhook", "name": "Shop", "url": hook_url})
        assert hook.status_code == 201, hook.text
        created = hook.json()
        secret = created["signing_secret"]
        assert secret.startswith("whsec_") and created["warning"]
        assert created["health"] == "new" and "abcdef123456" not in created["hint"]
        discord_url = f"{receiver.origin}/api/webhooks/42/{DISCORD_TOKEN}"
        given = [
            {"kind": "discord", "name": "Team", "url": discord_url},
            {"kind": "telegram", "name": "Phone", "bot_token": BOT_TOKEN, "chat_id": "12345"},
            {"kind": "email", "name": "Me", "email": "alerts.person@example.com"},
        ]
        for body in given:
            made = await owner.post(base, json=body)
            assert made.status_code == 201, made.text
            assert made.json()["signing_secret"] is None
        listed = (await owner.get(base)).json()["channels"]
        assert {c["kind"] for c in listed} == {"webhook", "discord", "telegram", "email"}
        channel_id = created["id"]

        # A test delivery: signed as Standard Webhooks sign, logged as a test.
        tested = await owner.post(f"{base}/{channel_id}/test")
        assert tested.status_code == 200, tested.text
        assert tested.json()["ok"] is True and "Delivered" in tested.json()["message"]
        (ping,) = receiver.requests
        assert json.loads(ping.body)["type"] == "test.ping"
        Webhook(secret).verify(ping.body, ping.headers)
        # A test that arrived is evidence of health, as a delivery would be.
        after_test = (await owner.get(f"{base}/{channel_id}")).json()
        assert after_test["health"] == "healthy", after_test
        # Rotation: a new secret once; both signatures for a day.
        rotated = await owner.post(f"{base}/{channel_id}/rotate-secret")
        assert rotated.status_code == 200, rotated.text
        new_secret = rotated.json()["signing_secret"]
        assert new_secret != secret and new_secret.startswith("whsec_")
        assert (await owner.post(f"{base}/{channel_id}/test")).json()["ok"] is True
        second = receiver.requests[-1]
        assert len(second.headers["webhook-signature"].split(" ")) == 2
        Webhook(secret).verify(second.body, second.headers)
        Webhook(new_secret).verify(second.body, second.headers)
        log = (await owner.get("/api/notifications/deliveries")).json()
        assert log["total"] == 2 and all(d["test"] and d["ok"] for d in log["deliveries"])

        # Secrets never appear again, in any answer.
        reads = [
            await owner.get(base),
            *[await owner.get(f"{base}/{c['id']}") for c in listed],
            await owner.get("/api/notifications/deliveries"),
            await owner.get(f"/api/notifications/deliveries?channel_id={channel_id}"),
            await owner.get("/api/notifications/notifications"),
            await owner.get("/api/notifications/rules"),
        ]
        assert all(r.status_code == 200 for r in reads), [r.text for r in reads]
        text = _shown(*reads)
        for needle in (secret, new_secret, "abcdef123456", DISCORD_TOKEN, BOT_TOKEN[12:],
                       "alerts.person", "whsec_", "secret_box"):  # fmt: skip
            assert needle not in text, needle

        # Another workspace: every door is a 404 and nothing changes.
        for method, path in (
            ("GET", f"{base}/{channel_id}"),
            ("PATCH", f"{base}/{channel_id}"),
            ("DELETE", f"{base}/{channel_id}"),
            ("POST", f"{base}/{channel_id}/test"),
            ("POST", f"{base}/{channel_id}/rotate-secret"),
            ("GET", f"/api/notifications/deliveries?channel_id={channel_id}"),
        ):
            body = {"enabled": False} if method == "PATCH" else None
            answer = await stranger.request(method, path, json=body)
            assert_envelope(answer, 404, "not_found")
        assert (await stranger.get(base)).json()["channels"] == []
        assert (await owner.get(f"{base}/{channel_id}")).json()["enabled"] is True
        assert len(receiver.requests) == 2

        # Tokens: read may read, not write; write may write.
        reader = await create_token(owner, ["read"])
        writer = await create_token(owner, ["write"], "writer")
        async with service.client(headers=bearer(reader)) as agent:
            assert (await agent.get(base)).status_code == 200
            for answer in (
                await agent.post(base, json={"kind": "email", "name": "x", "email": "a@b.co"}),
                await agent.patch(f"{base}/{channel_id}", json={"enabled": False}),
                await agent.delete(f"{base}/{channel_id}"),
                await agent.post(f"{base}/{channel_id}/test"),
            ):
                assert_envelope(answer, 403, "insufficient_scope")
        async with service.client(headers=bearer(writer)) as agent:
            off = await agent.patch(f"{base}/{channel_id}", json={"enabled": False})
            assert off.status_code == 200 and off.json()["health"] == "disabled"
            on = await agent.patch(f"{base}/{channel_id}", json={"enabled": True, "name": "S2"})
            assert on.json()["enabled"] is True and on.json()["name"] == "S2"
            gone = await agent.delete(f"{base}/{channel_id}")
            assert gone.status_code == 204
        assert_envelope(await owner.get(f"{base}/{channel_id}"), 404, "not_found")
    stop.set()


async def test_destinations_refused_and_bad_input_never_500(client: ServiceClient) -> None:
    base = "/api/notifications/channels"
    for body, word in (
        ({"kind": "webhook", "name": "x", "url": "https://127.0.0.1/hook"}, "webhook URL"),
        ({"kind": "webhook", "name": "x", "url": "https://10.0.0.1/hook"}, "webhook URL"),
        ({"kind": "webhook", "name": "x", "url": "https://169.254.169.254/latest"}, "URL"),
        ({"kind": "webhook", "name": "x", "url": "http://example.com/hook"}, "URL"),
        ({"kind": "discord", "name": "x", "url": EVIL_DISCORD}, "Discord"),
        ({"kind": "telegram", "name": "x", "bot_token": "nope", "chat_id": "1"}, "token"),
        ({"kind": "email", "name": "x", "email": "not-an-address"}, "e-mail"),
    ):
        answer = await client.post(base, json=body)
        refused = assert_envelope(answer, 422, "destination_refused")
        assert word.lower() in refused["error"]["message"].lower(), refused  # type: ignore[index]
    for body in (
        {"kind": "webhook", "name": "x"},
        {"kind": "telegram", "name": "x", "bot_token": BOT_TOKEN},
        {"kind": "email", "name": "x", "email": "a@b.co", "url": "https://x.example"},
        {"kind": "pager", "name": "x"},
        {"kind": "email", "name": " ", "email": "a@b.co"},
        {"kind": "email", "name": "n" * 101, "email": "a@b.co"},
        {"kind": "email", "name": "x", "email": "a@b.co", "colour": "red"},
        {"kind": "email", "name": "x\u0000", "email": "a@b.co"},
        {"kind": 3, "name": ["x"]},
    ):
        answer = await client.post(base, json=body)
        assert_invalid(answer)
    assert (
        await client.post(base, content=b"{", headers={"Content-Type": "application/json"})
    ).status_code == 400
    assert (await client.patch(f"{base}/chn_nope", json={"enabled": "maybe"})).status_code == 422
    assert_envelope(await client.get(f"{base}/chn_nope"), 404, "not_found")
    assert (await client.get(f"{base}/not-an-id")).status_code == 404
    assert (await client.get("/api/notifications/deliveries?page=0")).status_code == 422
    assert (await client.get("/api/notifications/notifications?status=lost")).status_code == 422
    assert (await client.get(base)).json()["channels"] == []


async def test_at_most_twenty_channels(client: ServiceClient) -> None:
    body = {"kind": "telegram", "name": "bot", "bot_token": BOT_TOKEN, "chat_id": "7"}
    for _ in range(20):
        assert (await client.post("/api/notifications/channels", json=body)).status_code == 201
    full = await client.post("/api/notifications/channels", json=body)
    assert_envelope(full, 409, "limit_reached")
    assert "20" in full.json()["error"]["message"]


async def test_tests_are_limited_per_workspace(settings: Settings, nursery: trio.Nursery) -> None:
    # Each test makes the service send to a destination its user named: ten a minute.
    service, receiver, stop = await _service(settings, nursery)
    async with service.client() as owner, service.client() as other:
        await signed_in(owner)
        await signed_in(other)
        base = "/api/notifications/channels"
        body = {"kind": "webhook", "name": "Hook", "url": f"{receiver.origin}/hook"}
        mine = (await owner.post(base, json=body)).json()["id"]
        theirs = (await other.post(base, json=body)).json()["id"]
        for _ in range(10):
            assert (await owner.post(f"{base}/{mine}/test")).status_code == 200
        limited = await owner.post(f"{base}/{mine}/test")
        assert_envelope(limited, 429, "rate_limited")
        assert int(limited.headers["retry-after"]) >= 1
        assert len(receiver.requests) == 10
        # Another workspace is not held back by it.
        assert (await other.post(f"{base}/{theirs}/test")).status_code == 200
    stop.set()
