"""Monitor endpoints over real sockets, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import trio

from api.settings import Settings
from tests.api.helpers import (
    active_monitor,
    assert_envelope,
    assert_invalid,
    bearer,
    create_token,
    resume_until_sold,
    signed_in,
    start_monitor,
    wait_active,
)
from tests.conftest import RunningService, ServiceClient, start_service
from tests.engine.fake_market import FakeMarket

URL = "https://www.vinted.fr/catalog?catalog[]=1904&brand_ids[]=53"


async def test_start_answers_202_paused_then_bootstrap_activates(
    client: ServiceClient, market: FakeMarket
) -> None:
    for item in range(1, 31):
        market.list(item, price=f"{item}.00")
    started = await start_monitor(client, URL, label="  Levi's jeans  ")
    assert started["status"] == "paused" and started["bootstrapping"] is True
    assert started["label"] == "Levi's jeans"
    monitor = await wait_active(client, str(started["id"]))
    assert monitor["counts"] == {
        "open": 30,
        "reserved": 0,
        "sold": 0,
        "deleted": 0,
        "likely_sold": 0,
    }
    assert monitor["bootstrapping"] is False and monitor["polls"] >= 1
    listed = (await client.get("/api/monitoring")).json()["monitors"]
    assert [m["id"] for m in listed] == [started["id"]]


async def test_start_validation(client: ServiceClient) -> None:
    both = await client.post("/api/monitoring/start", json={"url": URL, "analysis_id": "an_1"})
    neither = await client.post("/api/monitoring/start", json={"label": "x"})
    assert both.status_code == 422 and neither.status_code == 422
    refused = await client.post(
        "/api/monitoring/start", json={"url": "http://169.254.169.254/latest/meta-data"}
    )
    assert_envelope(refused, 400, "url_refused")
    short = await client.post("/api/monitoring/start", json={"url": URL, "interval_seconds": 5})
    body = assert_envelope(short, 400, "interval_too_short")
    assert body["min_interval_seconds"] == 60
    unknown = await client.post("/api/monitoring/start", json={"analysis_id": "an_nope"})
    assert_envelope(unknown, 404, "not_found")
    assert (await client.get("/api/monitoring")).json()["monitors"] == []


async def test_listings_paging_and_state_filter(client: ServiceClient, market: FakeMarket) -> None:
    for item in range(1, 121):
        market.list(item)
    monitor_id = await active_monitor(client, URL)
    for item in (5, 6, 7):
        market.states[item] = "sold"
    market.states[8] = "reserved"
    await resume_until_sold(client, monitor_id, 3)
    base = f"/api/monitoring/{monitor_id}/listings"
    default = (await client.get(base)).json()
    assert default["state"] == "open" and default["total"] == 116
    assert default["page_size"] == 50 and len(default["listings"]) == 50
    assert default["pages"] == 3
    last = (await client.get(base, params={"page": 3})).json()
    assert [x["item_id"] for x in last["listings"]] == list(range(105, 121))
    sold = (await client.get(base, params={"state": "sold"})).json()
    assert [x["item_id"] for x in sold["listings"]] == [5, 6, 7]
    assert sold["listings"][0]["price"] == "10.00"
    every = (await client.get(base, params={"state": "all", "page_size": 200})).json()
    assert every["total"] == 120
    for params in (
        {"state": "gone"},
        {"page": 0},
        {"page_size": 0},
        {"page_size": 201},
        {"page": "x"},
        {"condition": "good\x00"},  # PostgreSQL cannot bind it: refused, never a 500
        {"brand": "\x00"},
    ):
        bad = await client.get(base, params=params)
        assert assert_invalid(bad)[0]["loc"][0] == "query", params
    # The monitor's page ignores a niche link's value no listing can hold.
    page = await client.get(f"/monitors/{monitor_id}", params={"brand": "\x00"})
    assert page.status_code == 200


async def test_listings_of_a_niche_filtered_and_sorted(
    service: RunningService, client: ServiceClient, market: FakeMarket
) -> None:
    # Three niches' worth of listings: what an analysis' niche links ask for.
    for item in range(1, 13):
        market.list(item, price=f"{item * 5}.00")
        market.fields[item] = {
            "brand": "Levi's" if item <= 8 else "Zara",
            "size": "M" if item % 2 else "L",
            "condition": "Very good",
            "category_id": 1904 if item <= 10 else 1206,
        }
    monitor_id = await active_monitor(client, URL)
    base = f"/api/monitoring/{monitor_id}/listings"

    async def ids(**params: object) -> list[int]:
        answer = await client.get(base, params=params)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["total"] == len(body["listings"]) or body["pages"] > 1
        return [x["item_id"] for x in body["listings"]]

    niche = {"category": 1904, "brand": "levi's", "size": "M", "condition": "Very good"}
    assert await ids(**niche) == [1, 3, 5, 7]
    assert await ids(**niche, sort="-price") == [7, 5, 3, 1]
    assert await ids(**niche, price_min="10", price_max="25") == [3, 5]
    assert await ids(category=1206) == [11, 12]
    assert await ids(category=2**31 - 1) == []  # the largest id binds on both databases
    assert await ids(brand="Zara", sort="newest") == [12, 11, 10, 9]
    assert await ids(brand="Nobody") == []
    assert await ids(brand="Zara", page_size=1, page=2, sort="price") == [10]
    page = (await client.get(base, params={"brand": "Zara", "page_size": 3})).json()
    assert page["total"] == 4 and page["pages"] == 2
    # A misspelt filter is refused, not ignored (it would answer every listing).
    for params in (
        {"brands": "Zara"}, {"sort": "cheapest"}, {"price_min": "-1"},
        {"category": str(2**31)},  # past the stored ids: refused, never sent to the database
    ):  # fmt: skip
        bad = await client.get(base, params=params)
        assert bad.status_code == 422, (params, bad.text)
    # Another workspace's monitor is not found, filtered or not.
    async with service.client() as stranger:
        await signed_in(stranger, email="stranger@example.com")
        other = await stranger.get(base, params={"brand": "Zara"})
        assert other.status_code == 404


async def test_pause_resume_and_delete(client: ServiceClient, market: FakeMarket) -> None:
    market.list(1)
    monitor_id = await active_monitor(client, URL)
    paused = await client.post(f"/api/monitoring/{monitor_id}/pause")
    assert paused.status_code == 200 and paused.json()["status"] == "paused"
    resumed = await client.post(f"/api/monitoring/{monitor_id}/resume")
    assert resumed.json()["status"] == "active"
    deleted = await client.delete(f"/api/monitoring/{monitor_id}")
    assert deleted.status_code == 204 and deleted.content == b""
    assert_envelope(await client.get(f"/api/monitoring/{monitor_id}"), 404, "not_found")
    assert_envelope(await client.delete(f"/api/monitoring/{monitor_id}"), 404, "not_found")


async def test_another_workspace_sees_nothing(service: RunningService, market: FakeMarket) -> None:
    market.list(1)
    async with service.client() as owner, service.client() as stranger:
        await signed_in(owner)
        await signed_in(stranger)
        monitor_id = await active_monitor(owner, URL)
        base = f"/api/monitoring/{monitor_id}"
        for method, path in (
            ("GET", base),
            ("GET", f"{base}/listings"),
            ("GET", f"{base}/export"),
            ("POST", f"{base}/pause"),
            ("POST", f"{base}/resume"),
            ("DELETE", base),
        ):
            response = await stranger.request(method, path)
            assert_envelope(response, 404, "not_found")
            assert monitor_id not in response.text
        assert (await stranger.get("/api/monitoring")).json()["monitors"] == []
        assert (await owner.get(base)).json()["status"] == "active"  # untouched


async def test_tokens_need_the_right_scope(service: RunningService, market: FakeMarket) -> None:
    market.list(1)
    async with service.client() as browser:
        await signed_in(browser)
        reader = await create_token(browser, ["read"])
        writer = await create_token(browser, ["write"])
    async with service.client() as agent:
        denied = await agent.post(
            "/api/monitoring/start", json={"url": URL}, headers=bearer(reader)
        )
        assert_envelope(denied, 403, "insufficient_scope")
        started = await agent.post(
            "/api/monitoring/start",
            json={"url": URL, "interval_seconds": 60},
            headers=bearer(writer),
        )
        assert started.status_code == 202
        listed = await agent.get("/api/monitoring", headers=bearer(reader))
        assert [m["id"] for m in listed.json()["monitors"]] == [started.json()["id"]]


async def test_export_is_a_valid_self_describing_document(
    client: ServiceClient, market: FakeMarket
) -> None:
    import jsonschema

    for item in range(1, 11):
        market.list(item)
    monitor_id = await active_monitor(client, URL)
    market.states[3] = "sold"
    await resume_until_sold(client, monitor_id, 1)
    response = await client.get(f"/api/monitoring/{monitor_id}/export")
    schema = (await client.get("/api/monitoring/export-schema")).json()
    assert response.status_code == 200
    assert "attachment" in response.headers["content-disposition"]
    document = json.loads(response.content)
    jsonschema.validate(document, schema)
    assert document["format"] == "nichescope.monitor-export" and document["version"] == 2
    assert document["monitor"]["id"] == monitor_id
    assert "workspace_id" not in document["monitor"]
    assert len(document["listings"]) == 10
    assert {(e["item_id"], e["to_state"]) for e in document["events"] if e["kind"] == "state"} == {
        (3, "sold")
    }
    assert len(document["polls"]) >= 2


async def test_operators_see_actors_and_others_do_not(
    service: RunningService, market: FakeMarket
) -> None:
    market.list(1)
    async with service.client() as ops, service.client() as user:
        await signed_in(ops, "ops@example.com")
        await signed_in(user)
        monitor_id = await active_monitor(user, URL)
        assert_envelope(await user.get("/api/ops/actors"), 403, "forbidden")
        body = (await ops.get("/api/ops/actors")).json()
        assert body["node_id"] == service.settings.node_id
        # The first housekeeping round comes minutes after the start: none yet.
        assert body["housekeeping"]["rounds"] == 0 and body["housekeeping"]["restarts"] == 0
        [actor] = [a for a in body["actors"] if a["monitor_id"] == monitor_id]
        assert actor["kind"] == "monitor" and actor["restarts"] == 0
        assert actor["state"] in {"idle", "polling"}
        assert actor["queue_depth"] == 0
        assert actor["node_id"] == service.settings.node_id
        clustered = service.settings.database_url.startswith("postgresql")
        # PostgreSQL runs in cluster mode: the monitor is leased to this node.
        assert (actor["lease_expires_at"] is not None) == clustered
        dispatcher = body["notifications"]  # this node's notification dispatcher runs
        assert dispatcher["state"] == "running" and dispatcher["restarts"] == 0
        assert dispatcher["delivered"] == 0 and dispatcher["sending"] == 0

        assert_envelope(await user.get("/api/ops/nodes"), 403, "forbidden")
        nodes = (await ops.get("/api/ops/nodes")).json()
        assert nodes["cluster"] is clustered
        [this] = [n for n in nodes["nodes"] if n["this_node"]]
        assert this["node_id"] == service.settings.node_id and this["alive"] is True
        if not clustered:
            assert this["monitors"] >= 1  # counted live; a cluster node counts at heartbeats
        async with ops.stream("GET", "/api/ops/actors/stream") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            async for line in stream.aiter_lines():
                if line.startswith("data: "):
                    event = json.loads(line.removeprefix("data: "))
                    assert any(a["monitor_id"] == monitor_id for a in event["actors"])
                    break


async def test_plans_and_quotas_bite_where_things_are_created(
    settings: Settings, market: FakeMarket, nursery: trio.Nursery
) -> None:
    market.list(1)
    trial_quotas = {
        "active_monitors": 1,
        "runs_per_day": 1,
        "items_per_run": 100,
        "min_poll_seconds": 60,
    }
    strict = settings.model_copy(update={"plan_quotas": {"trial": trial_quotas}})
    running, stop = await start_service(nursery, strict, market)
    async with running.client() as planless, running.client() as trial:
        await signed_in(planless, trial=False)
        await signed_in(trial)
        refused = await planless.post("/api/monitoring/start", json={"url": URL})
        assert_envelope(refused, 403, "plan_required")
        assert (await planless.get("/api/monitoring")).status_code == 200  # reading is fine
        first = await trial.post("/api/monitoring/start", json={"url": URL, "interval_seconds": 60})
        assert first.status_code == 202, first.text
        second = await trial.post(
            "/api/monitoring/start", json={"url": URL, "interval_seconds": 60}
        )
        body = assert_envelope(second, 403, "quota_exceeded")
        assert body["quota"] == "active_monitors" and body["limit"] == 1
        too_many_items = await trial.post("/api/runs", json={"url": URL, "max_items": 101})
        assert assert_envelope(too_many_items, 403, "quota_exceeded")["quota"] == "items_per_run"
        run = await trial.post("/api/runs", json={"url": URL, "max_items": 100})
        assert run.status_code == 201
        again = await trial.post("/api/runs", json={"url": URL, "max_items": 100})
        assert assert_envelope(again, 403, "quota_exceeded")["quota"] == "runs_per_day"
    stop.set()
