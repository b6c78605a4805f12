"""Runs, analyses, graphs, dashboard and import over real sockets, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json

import trio

from api.settings import Settings
from scrapers import newest_first
from tests.api.helpers import (
    active_monitor,
    assert_envelope,
    bearer,
    create_token,
    resume_until_sold,
    signed_in,
    wait_finished_run,
)
from tests.conftest import RunningService, ServiceClient, start_service
from tests.engine.fake_market import FakeMarket

URL = "https://www.vinted.fr/catalog?catalog[]=1904"


def _stock(market: FakeMarket, n: int = 60) -> None:
    for item in range(1, n + 1):
        market.list(item, price=f"{10 + item % 7}.00")


async def test_url_run_succeeds_with_an_analysis_graphs_and_log(
    client: ServiceClient, market: FakeMarket
) -> None:
    _stock(market)
    created = await client.post("/api/runs", json={"url": URL, "label": "jeans", "max_items": 50})
    assert created.status_code == 201, created.text
    assert created.json()["state"] in {"queued", "running"}
    run = await wait_finished_run(client, created.json()["id"])
    assert run["state"] == "succeeded", run
    assert run["items"] == 50 and run["progress"] == 1.0 and run["analysis_id"]
    analysis = (await client.get(f"/api/analyses/{run['analysis_id']}")).json()
    assert analysis["source"] == "scrape" and analysis["run_id"] == run["id"]
    assert analysis["result"]["niches"], analysis["result"]
    for name, links in analysis["graphs"].items():
        spec = await client.get(links["vega_lite"])
        assert spec.status_code == 200 and "$schema" in spec.json(), name
        svg = await client.get(links["svg"])
        assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg")
        assert svg.text.lstrip().startswith("<svg")
    log = await client.get(f"/api/runs/{run['id']}/log", params={"tail_lines": 2})
    assert log.headers["content-type"].startswith("text/plain")
    assert len(log.text.splitlines()) == 2 and "done: analysis" in log.text
    for bad in (0, 5001, "x"):
        assert (
            await client.get(f"/api/runs/{run['id']}/log", params={"tail_lines": bad})
        ).status_code == 422
    listed = (await client.get("/api/analyses")).json()
    assert [a["id"] for a in listed["analyses"]] == [run["analysis_id"]]
    board = (await client.get("/api/dashboard")).json()
    assert board["analysis"]["id"] == run["analysis_id"]
    assert board["top_niches"] and board["recent_runs"][0]["id"] == run["id"]
    lean = (
        await client.get(
            "/api/dashboard",
            params={"include_top_niches": "false", "include_recent_runs": "false"},
        )
    ).json()
    assert "top_niches" not in lean and "recent_runs" not in lean


async def test_monitor_run_replay_and_alert_downloads(
    client: ServiceClient, market: FakeMarket
) -> None:
    _stock(market)
    monitor_id = await active_monitor(client, URL)
    run = (await client.post("/api/runs", json={"monitor_id": monitor_id})).json()
    done = await wait_finished_run(client, run["id"])
    assert done["state"] == "succeeded" and done["source"] == "monitor"
    replay = await client.post(f"/api/runs/{run['id']}/replay")
    assert replay.status_code == 200
    assert replay.json()["replay_of"] == run["id"] and replay.json()["id"] != run["id"]
    assert (await wait_finished_run(client, replay.json()["id"]))["state"] == "succeeded"
    as_csv = await client.get(f"/api/runs/{run['id']}/alerts-download")
    assert as_csv.headers["content-type"].startswith("text/csv")
    assert f"nichescope-alerts-{run['id']}.csv" in as_csv.headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(as_csv.text)))
    as_json = await client.get(f"/api/runs/{run['id']}/alerts-download", params={"format": "json"})
    assert as_json.json()["run_id"] == run["id"] and isinstance(as_json.json()["alerts"], list)
    # The header row is there whatever the number of alerts (none, here), and each alert
    # is one row that says what, where and why.
    assert rows[0] == [
        "kind", "niche", "category_id", "brand", "size", "condition", "item_id", "reason",
        "figures",
    ]  # fmt: skip
    assert len(rows) == 1 + len(as_json.json()["alerts"])
    for row, alert in zip(rows[1:], as_json.json()["alerts"], strict=True):
        assert row[0] == alert["kind"] and row[7] == alert["reason"]
    bad = await client.get(f"/api/runs/{run['id']}/alerts-download", params={"format": "xml"})
    assert bad.status_code == 422
    runs = (await client.get("/api/runs", params={"page_size": 1})).json()
    assert runs["total"] == 2 and len(runs["runs"]) == 1
    assert runs["runs"][0]["id"] == replay.json()["id"]  # newest first


async def test_cancel_delete_and_conflicts(client: ServiceClient, market: FakeMarket) -> None:
    _stock(market)
    market.gate = trio.Event()  # the scrape hangs until released
    run = (await client.post("/api/runs", json={"url": URL})).json()
    with trio.fail_after(60):
        while (await client.get(f"/api/runs/{run['id']}")).json()["state"] != "running":
            await trio.sleep(0.05)
    busy = await client.delete(f"/api/runs/{run['id']}")
    assert_envelope(busy, 409, "run_running")
    with trio.fail_after(10):
        cancelled = await client.post(f"/api/runs/{run['id']}/cancel")
    assert cancelled.json()["state"] == "cancelled"
    again = await client.post(f"/api/runs/{run['id']}/cancel")
    assert_envelope(again, 409, "run_finished")
    no_alerts = await client.get(f"/api/runs/{run['id']}/alerts-download")
    assert_envelope(no_alerts, 409, "no_analysis")
    deleted = await client.delete(f"/api/runs/{run['id']}")
    assert deleted.status_code == 200 and deleted.json() == {"id": run["id"], "deleted": True}
    assert_envelope(await client.get(f"/api/runs/{run['id']}"), 404, "not_found")
    assert_envelope(await client.get(f"/api/runs/{run['id']}/log"), 404, "not_found")


async def test_run_validation_and_isolation(service: RunningService, market: FakeMarket) -> None:
    _stock(market)
    async with service.client() as owner, service.client() as stranger:
        await signed_in(owner)
        await signed_in(stranger)
        for body in ({}, {"url": URL, "monitor_id": "mon_x"}, {"url": URL, "max_items": 0}):
            assert (await owner.post("/api/runs", json=body)).status_code == 422
        assert_envelope(
            await owner.post("/api/runs", json={"url": "http://127.0.0.1:22/"}), 400, "url_refused"
        )
        assert_envelope(
            await owner.post("/api/runs", json={"monitor_id": "mon_nope"}), 404, "not_found"
        )
        run = (await owner.post("/api/runs", json={"url": URL})).json()
        done = await wait_finished_run(owner, run["id"])
        analysis_id = done["analysis_id"]
        for method, path in (
            ("GET", f"/api/runs/{run['id']}"),
            ("GET", f"/api/runs/{run['id']}/log"),
            ("GET", f"/api/runs/{run['id']}/alerts-download"),
            ("POST", f"/api/runs/{run['id']}/cancel"),
            ("POST", f"/api/runs/{run['id']}/replay"),
            ("DELETE", f"/api/runs/{run['id']}"),
            ("GET", f"/api/analyses/{analysis_id}"),
            ("GET", f"/api/analyses/{analysis_id}/graphs/niche-map.json"),
            ("GET", f"/api/analyses/{analysis_id}/graphs/niche-map.svg"),
        ):
            response = await stranger.request(method, path)
            assert_envelope(response, 404, "not_found")
        assert_envelope(
            await stranger.get("/api/dashboard", params={"run_id": run["id"]}), 404, "not_found"
        )
        assert (await stranger.get("/api/analyses")).json()["analyses"] == []
        assert (await stranger.get("/api/runs")).json()["runs"] == []
        assert_envelope(
            await owner.get(f"/api/analyses/{analysis_id}/graphs/pie-chart.json"), 404, "not_found"
        )
        reader = await create_token(owner, ["read"])
        async with service.client() as agent:
            listed = await agent.get("/api/analyses", headers=bearer(reader))
            assert [a["id"] for a in listed.json()["analyses"]] == [analysis_id]
            denied = await agent.post("/api/runs", json={"url": URL}, headers=bearer(reader))
            assert_envelope(denied, 403, "insufficient_scope")


async def test_export_import_round_trip_without_scraping(
    service: RunningService, client: ServiceClient, market: FakeMarket
) -> None:
    _stock(market)
    monitor_id = await active_monitor(client, URL)
    for item in range(1, 20):
        market.states[item] = "sold"
    await resume_until_sold(client, monitor_id, 19)
    await client.post(f"/api/monitoring/{monitor_id}/pause")
    live = await wait_finished_run(
        client,
        (await client.post("/api/runs", json={"monitor_id": monitor_id})).json()["id"],
    )
    export = (await client.get(f"/api/monitoring/{monitor_id}/export")).content
    calls = (market.feed_calls, market.detail_calls)
    imported = await client.post(
        "/api/analysis/import-monitoring",
        content=export,
        headers={"Content-Type": "application/json"},
    )
    assert imported.status_code == 201, imported.text
    assert (market.feed_calls, market.detail_calls) == calls  # no marketplace request
    body = imported.json()
    assert body["source"] == "import" and body["run_id"] is None
    live_analysis = (await client.get(f"/api/analyses/{live['analysis_id']}")).json()

    def keys(result: dict[str, object]) -> list[object]:
        return [
            (n["key"] if "key" in n else n.get("niche"), n.get("sold"), n.get("supply"))
            for n in result["niches"]  # type: ignore[union-attr]
        ]

    assert keys(body["result"]) == keys(live_analysis["result"])
    svg = await client.get(body["graphs"]["market-flow"]["svg"])
    assert svg.status_code == 200
    # A multipart upload with the session cookie, as the service's own pages send it
    # (a browser states its origin; api/http/cross_site.py).
    as_file = await client.post(
        "/api/analysis/import-monitoring",
        files={"file": ("export.json", export)},
        headers={"Origin": str(client.base_url).rstrip("/")},
    )
    assert as_file.status_code == 201
    before = (await client.get("/api/analyses")).json()["total"]
    document = json.loads(export)
    for bad in (
        export[: len(export) // 2],
        b"[]",
        json.dumps({**document, "version": 99}).encode(),
        json.dumps({**document, "format": "something-else"}).encode(),
        json.dumps({**document, "listings": "nope"}).encode(),
    ):
        refused = await client.post(
            "/api/analysis/import-monitoring",
            content=bad,
            headers={"Content-Type": "application/json"},
        )
        assert_envelope(refused, 422, "invalid_export")
    assert (await client.get("/api/analyses")).json()["total"] == before  # nothing half-written


async def test_oversized_import_is_refused_before_reading(
    settings: Settings, market: FakeMarket, nursery: trio.Nursery
) -> None:
    small = settings.model_copy(update={"import_max_bytes": 2000})
    running, stop = await start_service(nursery, small, market)
    async with running.client() as client:
        await signed_in(client)
        response = await client.post(
            "/api/analysis/import-monitoring",
            content=b"{" + b" " * 5000 + b"}",
            headers={"Content-Type": "application/json"},
        )
    stop.set()
    body = assert_envelope(response, 413, "payload_too_large")
    assert body["max_bytes"] == 2000


async def test_monitor_from_an_analysis(service: RunningService, market: FakeMarket) -> None:
    _stock(market)
    async with service.client() as owner, service.client() as stranger:
        await signed_in(owner)
        await signed_in(stranger)
        run = (await owner.post("/api/runs", json={"url": URL})).json()
        analysis_id = (await wait_finished_run(owner, run["id"]))["analysis_id"]
        started = await owner.post(
            "/api/monitoring/start", json={"analysis_id": analysis_id, "interval_seconds": 60}
        )
        assert started.status_code == 202, started.text
        monitor = started.json()
        assert monitor["source_analysis_id"] == analysis_id
        # The run's catalogue, read newest first as every monitor reads its feed.
        assert monitor["url"] == newest_first(run["url"])
        assert monitor["url"].endswith("order=newest_first")
        foreign = await stranger.post(
            "/api/monitoring/start", json={"analysis_id": analysis_id, "interval_seconds": 60}
        )
        assert_envelope(foreign, 404, "not_found")
