"""Analyses are immutable once stored: served from a per-process cache with an ETag, a 304
for a client that has them, and never after a delete (on SQLite and PostgreSQL)."""

from __future__ import annotations

from jsonschema import Draft202012Validator

from api.naming import DELETED_MONITOR
from tests.api.helpers import assert_envelope, signed_in, wait_active, wait_finished_run
from tests.api.test_runs import URL, _stock
from tests.conftest import RunningService, ServiceClient
from tests.engine.fake_market import FakeMarket


async def test_a_cached_analysis_is_304_for_its_etag_and_gone_after_a_delete(
    service: RunningService, market: FakeMarket
) -> None:
    _stock(market)
    async with service.client() as client, service.client() as stranger:
        await signed_in(client)
        await signed_in(stranger)
        created = await client.post("/api/runs", json={"url": URL, "label": "jeans"})
        run = await wait_finished_run(client, created.json()["id"])
        path = f"/api/analyses/{run['analysis_id']}"

        first = await client.get(path)  # parsed from the database, then kept
        again = await client.get(path)  # from the cache
        assert first.status_code == again.status_code == 200
        assert first.json() == again.json() and first.json()["title"] == "jeans"
        assert first.json()["result"]["niches"] and "graphs" not in first.json()["result"]
        tag = first.headers["ETag"]
        assert tag.startswith('"') and again.headers["ETag"] == tag
        assert "no-cache" in first.headers["Cache-Control"]

        # The answer is still what the OpenAPI document promises (no longer validated on
        # the way out: the body is spliced from cached bytes).
        document = (await client.get("/openapi.json")).json()
        schema = document["paths"]["/api/analyses/{analysis_id}"]["get"]["responses"]["200"]
        body_schema = schema["content"]["application/json"]["schema"]
        Draft202012Validator({**body_schema, "components": document["components"]}).validate(
            first.json()
        )

        fresh = await client.get(path, headers={"If-None-Match": tag})
        assert fresh.status_code == 304 and fresh.content == b"" and fresh.headers["ETag"] == tag
        weak = await client.get(path, headers={"If-None-Match": f'"other", W/{tag}'})
        assert weak.status_code == 304
        stale = await client.get(path, headers={"If-None-Match": '"something-else"'})
        assert stale.status_code == 200 and stale.json() == first.json()

        graph = f"{path}/graphs/niche-map.json"
        spec = await client.get(graph)
        assert spec.status_code == 200 and "$schema" in spec.json()
        assert (
            await client.get(graph, headers={"If-None-Match": spec.headers["ETag"]})
        ).status_code == 304
        svg = await client.get(f"{path}/graphs/niche-map.svg")
        assert svg.status_code == 200 and svg.text.lstrip().startswith("<svg")

        board = (await client.get("/api/dashboard")).json()
        assert board["analysis"]["id"] == run["analysis_id"]
        assert board["top_niches"] == first.json()["result"]["niches"][:10]

        # Another workspace gets a 404 for the cached analysis, with or without the tag.
        assert_envelope(await stranger.get(path), 404, "not_found")
        assert_envelope(await stranger.get(path, headers={"If-None-Match": tag}), 404, "not_found")
        assert_envelope(await stranger.get(graph), 404, "not_found")

        deleted = await client.delete(f"/api/runs/{run['id']}")
        assert deleted.status_code == 200
        for gone in (path, graph, f"{path}/graphs/niche-map.svg"):
            assert_envelope(await client.get(gone), 404, "not_found")
            assert_envelope(
                await client.get(gone, headers={"If-None-Match": "*"}), 404, "not_found"
            )
        board = (await client.get("/api/dashboard")).json()
        assert board["analysis"] is None and board["top_niches"] == []


async def test_the_etag_follows_the_title(client: ServiceClient, market: FakeMarket) -> None:
    """The title is the one part of an analysis answer that may change (a monitor run is
    named after its monitor, until the monitor is deleted): a client holding the old tag
    gets the new body, never a 304 for a stale name."""
    _stock(market)
    monitor = (
        await client.post(
            "/api/monitoring/start",
            json={"url": URL, "interval_seconds": 60, "label": "Levi's jeans"},
        )
    ).json()
    await wait_active(client, monitor["id"])
    created = await client.post("/api/runs", json={"monitor_id": monitor["id"]})
    run = await wait_finished_run(client, created.json()["id"])
    path = f"/api/analyses/{run['analysis_id']}"
    before = await client.get(path)
    assert before.json()["title"] == "Levi's jeans"
    assert (await client.delete(f"/api/monitoring/{monitor['id']}")).status_code == 204
    after = await client.get(path, headers={"If-None-Match": before.headers["ETag"]})
    assert after.status_code == 200 and after.json()["title"] == DELETED_MONITOR
    assert after.headers["ETag"] != before.headers["ETag"]
    assert after.json()["result"] == before.json()["result"]
