"""`/api/notifications/rules`: CRUD, validation (never a 500), workspace scoping of the
monitor and channel ids a rule names, the 50-rule limit; and the OpenAPI `webhooks`."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
from schemathesis.specs.openapi.definitions import OPENAPI_31

from tests.api.helpers import assert_envelope, assert_invalid, bearer, create_token, signed_in
from tests.conftest import RunningService

URL = "https://www.vinted.fr/catalog?catalog[]=1904&brand_ids[]=53"
BOT = {"kind": "telegram", "name": "bot", "bot_token": "1234567:" + "A" * 35, "chat_id": "9"}
RULES = "/api/notifications/rules"


async def _monitor_and_channel(client: httpx.AsyncClient) -> tuple[str, str]:
    started = await client.post("/api/monitoring/start", json={"url": URL})
    assert started.status_code == 202, started.text
    channel = await client.post("/api/notifications/channels", json=BOT)
    assert channel.status_code == 201, channel.text
    return started.json()["id"], channel.json()["id"]


async def test_rules_crud_validation_and_scoping(service: RunningService) -> None:
    async with service.client() as owner, service.client() as stranger:
        await signed_in(owner)
        await signed_in(stranger)
        monitor, channel = await _monitor_and_channel(owner)
        other_monitor, other_channel = await _monitor_and_channel(stranger)
        rule: dict[str, Any] = {
            "name": "Cheap Levi's",
            "kinds": ["deal", "price_drop"],
            "monitor_id": monitor,
            "deal_ratio": 0.6,
            "filters": {"price_min": 5, "price_max": 40.5, "brands": ["Levi's"],
                        "exclude_keywords": ["damaged"], "business": False},
            "channel_ids": [channel],
            "mode": "digest",
            "digest_hour": 7,
            "quiet_start": "22:00",
            "quiet_end": "07:30",
            "timezone": "Europe/Paris",
        }  # fmt: skip
        made = await owner.post(RULES, json=rule)
        assert made.status_code == 201, made.text
        body = made.json()
        assert body["filters"]["price_max"] == 40.5 and body["channel_ids"] == [channel]
        assert body["timezone"] == "Europe/Paris" and body["mode"] == "digest"
        default = await owner.post(RULES, json={"name": "Everything", "kinds": ["new_listing"]})
        assert default.status_code == 201 and default.json()["monitor_id"] is None
        own = (await owner.get(RULES, params={"monitor_id": monitor})).json()["rules"]
        assert [r["id"] for r in own] == [body["id"]]
        assert len((await owner.get(RULES)).json()["rules"]) == 2

        replaced = await owner.put(f"{RULES}/{body['id']}", json={**rule, "name": "Renamed"})
        assert replaced.status_code == 200 and replaced.json()["name"] == "Renamed"
        assert (await owner.get(f"{RULES}/{body['id']}")).json()["name"] == "Renamed"

        bad: list[dict[str, Any]] = [
            {**rule, "deal_ratio": 0},
            {**rule, "deal_ratio": 1.5},
            {**rule, "filters": {"price_min": 50, "price_max": 10}},
            {**rule, "quiet_start": "25:00"},
            {**rule, "quiet_end": None},
            {**rule, "timezone": "Mars/Olympus_Mons"},
            {**rule, "digest_hour": 24},
            {**rule, "kinds": ["nope"]},
            {**rule, "kinds": []},
            {**rule, "name": "n" * 101},
            {**rule, "filters": {"brands": [f"b{i}" for i in range(51)]}},
            {**rule, "filters": {"include_keywords": "not a list"}},
            {**rule, "channel_ids": ["../etc"]},
            {**rule, "colour": "red"},
            {"kinds": ["deal"]},
        ]
        for wrong in bad:
            answer = await owner.post(RULES, json=wrong)
            assert_invalid(answer)
        # Another workspace's ids are not found, and nothing is written.
        for wrong in (
            {**rule, "monitor_id": other_monitor},
            {**rule, "channel_ids": [other_channel]},
        ):
            assert_envelope(await owner.post(RULES, json=wrong), 404, "not_found")
            assert_envelope(await owner.put(f"{RULES}/{body['id']}", json=wrong), 404, "not_found")
        assert_envelope(
            await owner.get(RULES, params={"monitor_id": other_monitor}), 404, "not_found"
        )
        for method in ("GET", "PUT", "DELETE"):
            answer = await stranger.request(
                method, f"{RULES}/{body['id']}", json=rule if method == "PUT" else None
            )
            assert_envelope(answer, 404, "not_found")
        assert (await stranger.get(RULES)).json()["rules"] == []
        assert (await owner.get(f"{RULES}/{body['id']}")).json()["name"] == "Renamed"
        assert len((await owner.get(RULES)).json()["rules"]) == 2

        # A deleted channel leaves every rule.
        assert (await owner.delete(f"/api/notifications/channels/{channel}")).status_code == 204
        assert (await owner.get(f"{RULES}/{body['id']}")).json()["channel_ids"] == []

        reader = await create_token(owner, ["read"])
        async with service.client(headers=bearer(reader)) as agent:
            assert (await agent.get(RULES)).status_code == 200
            assert_envelope(await agent.post(RULES, json=rule), 403, "insufficient_scope")
            assert_envelope(await agent.delete(f"{RULES}/{body['id']}"), 403, "insufficient_scope")
        assert (await owner.delete(f"{RULES}/{body['id']}")).status_code == 204
        assert_envelope(await owner.get(f"{RULES}/{body['id']}"), 404, "not_found")

        # At most 50 rules per workspace.
        for i in range(49):
            assert (
                await owner.post(RULES, json={"name": f"r{i}", "kinds": ["deal"]})
            ).status_code == 201
        full = await owner.post(RULES, json={"name": "one more", "kinds": ["deal"]})
        assert_envelope(full, 409, "limit_reached")


async def test_openapi_documents_the_webhooks(service: RunningService) -> None:
    async with service.client() as client:
        document = (await client.get("/openapi.json")).json()
    jsonschema.Draft202012Validator(OPENAPI_31).validate(document)
    events = {"listing.new", "listing.deal", "listing.price_drop", "niche.sell_through_jump",
              "niche.new_hot", "monitor.error", "test.ping"}  # fmt: skip
    assert set(document["webhooks"]) == events
    schemas = document["components"]["schemas"]
    for event, item in document["webhooks"].items():
        post = item["post"]
        headers = {p["name"] for p in post["parameters"] if p["in"] == "header"}
        assert headers == {"webhook-id", "webhook-timestamp", "webhook-signature"}
        ref = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        schema = schemas[ref.rsplit("/", 1)[1]]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["properties"]["type"] == {"const": event}
    ids = {op["operationId"] for ops in document["paths"].values() for op in ops.values()}
    assert {"listNotificationChannels", "createNotificationChannel", "testNotificationChannel",
            "rotateNotificationChannelSecret", "listNotificationRules", "replaceNotificationRule",
            "listNotificationDeliveries", "listNotifications"} <= ids  # fmt: skip
    # A payload as the contract shows it validates against its event's schema.
    deal = {
        "type": "listing.deal", "version": 1, "id": "ntf_1", "created_at": "2026-11-26T05:01:02Z",
        "monitor": {"id": "mon_1", "label": "Levi's jeans", "url": "https://x.example/c"},
        "rule": {"id": "rul_1", "name": "Cheap Levi's"},
        "listing": {"item_id": 123, "title": "Jeans", "brand": "Levi's", "size": "W32",
                    "condition": "Very good", "category": "Men › Jeans", "price": "12.00",
                    "previous_price": None, "currency": "EUR", "url": "https://x.example/i",
                    "photo_url": None, "seller": "login"},
        "niche": {"label": "Men › Jeans", "median_sold_price": "25.00", "sold": 14,
                  "sell_through": 0.61, "median_days_to_sell": 4.5, "confidence": "medium"},
        "reason": "asks €12.00, 52% under", "figures": {"price": 12.0, "discount": 0.52},
    }  # fmt: skip
    resolver = {"components": document["components"], **schemas["WebhookListingDeal"]}
    jsonschema.Draft202012Validator(resolver).validate(deal)
