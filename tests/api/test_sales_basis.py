"""Which sales an analysis counts (its sales basis) through the API, the pages and a replay:
with every confirming source refused, a monitor records likely sales only, and by default its
analyses count them and say so; asked, confirmed sales only; stored before, still readable."""

from __future__ import annotations

import json
from typing import Any

import trio_asyncio

from store import NewAnalysis, ObservedListing, open_store
from tests.api.helpers import active_monitor, wait_finished_run
from tests.api.test_monitor_evidence import TODAY, URL, _poll
from tests.conftest import RunningService, ServiceClient
from tests.engine.fake_market import FakeMarket

REFUSED = "Sales inferred from absence: the marketplace refused item pages"
WITHDRAWAL = "Absence cannot tell a sale from a withdrawal"


async def _likely_sales_only(
    service: RunningService, client: ServiceClient, market: FakeMarket
) -> str:
    """A paused monitor whose item 2 left the feed for three polls with no source to confirm
    it: one likely sale, not one confirmed (every confirming source refused)."""
    for item in range(1, 7):
        market.list(item)
    monitor_id = await active_monitor(client, URL, interval_seconds=None)
    await client.post(f"/api/monitoring/{monitor_id}/pause")
    async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
        rest = tuple(ObservedListing(i) for i in (4, 5, 6))
        for minute in range(3):
            await _poll(store, monitor_id, minute, seen=(TODAY, *rest), absent=(2,))
    return monitor_id


async def _run(client: ServiceClient, body: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """A run of `body` to its end, and its analysis' `result`."""
    created = await client.post("/api/runs", json=body)
    assert created.status_code == 201, created.text
    run = await wait_finished_run(client, created.json()["id"])
    assert run["state"] == "succeeded", run
    analysis = (await client.get(f"/api/analyses/{run['analysis_id']}")).json()
    return run, analysis["result"]


def _basis(result: dict[str, Any]) -> tuple[Any, ...]:
    return (
        result["sales_basis"],
        result["sales_basis_reason"],
        result["include_likely_sales_requested"],
        result["include_likely_sales"],
    )


async def test_with_no_confirmed_sale_analyses_count_likely_sales_and_say_so(
    service: RunningService, client: ServiceClient, market: FakeMarket
) -> None:
    monitor_id = await _likely_sales_only(service, client, market)

    # Asked for confirmed sales only: honoured, though it leaves no sale; a replay asks the same.
    body = {"monitor_id": monitor_id, "include_likely_sales": False}
    asked, confirmed_only = await _run(client, body)
    assert asked["include_likely_sales"] is False
    assert _basis(confirmed_only) == ("confirmed", "requested", False, False)
    assert confirmed_only["counts"]["sold"] == 0 and confirmed_only["counts"]["sold_likely"] == 1
    assert WITHDRAWAL.lower() in confirmed_only["sales_basis_note"].lower()
    replay = (await client.post(f"/api/runs/{asked['id']}/replay")).json()
    assert replay["include_likely_sales"] is False

    # By default: the evidence decides, likely sales count, and the answer says so.
    run, result = await _run(client, {"monitor_id": monitor_id})
    assert run["include_likely_sales"] is None
    assert _basis(result) == ("likely", "no_confirmed_sales", None, True)
    counts = result["counts"]
    assert (counts["sold"], counts["sold_confirmed"], counts["sold_likely"]) == (1, 0, 1)
    note = result["sales_basis_note"]
    assert note.startswith(REFUSED) and WITHDRAWAL in note
    # Reproducible: a replay over the same evidence asks the same and chooses the same.
    again = (await client.post(f"/api/runs/{run['id']}/replay")).json()
    assert again["include_likely_sales"] is None
    again = await wait_finished_run(client, again["id"])
    replayed = (await client.get(f"/api/analyses/{again['analysis_id']}")).json()["result"]
    assert _basis(replayed) == _basis(result) and replayed["counts"] == counts

    # The OpenAPI document says what the fields mean.
    openapi = (await client.get("/openapi.json")).json()
    answer = openapi["paths"]["/api/analyses/{analysis_id}"]["get"]["responses"]["200"]
    schema = answer["content"]["application/json"]["schema"]
    if "$ref" in schema:
        schema = openapi["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    assert "sales_basis_note" in schema["properties"]["result"]["description"]

    board = (await client.get("/api/dashboard")).json()
    assert board["analysis"]["id"] == again["analysis_id"]
    assert board["analysis"]["sales_basis"] == "likely"
    assert board["analysis"]["sales_basis_note"] == note

    page = (await client.get(f"/analyses/{run['analysis_id']}")).text
    evidence = page[page.index("data-evidence") :]
    assert 'data-sales-basis="likely"' in evidence and REFUSED in evidence
    assert WITHDRAWAL in evidence
    dashboard = (await client.get("/dashboard")).text
    assert 'data-sales-basis="likely"' in dashboard and REFUSED in dashboard

    # An import of the monitor's export decides as the run did; asked, confirmed only.
    export = (await client.get(f"/api/monitoring/{monitor_id}/export")).json()
    imported = await client.post("/api/analysis/import-monitoring", json=export)
    assert _basis(imported.json()["result"]) == ("likely", "no_confirmed_sales", None, True)
    imported = await client.post(
        "/api/analysis/import-monitoring",
        json=export,
        params={"include_likely_sales": "false"},
    )
    assert _basis(imported.json()["result"]) == ("confirmed", "requested", False, False)


async def test_an_analysis_stored_before_the_sales_basis_still_reads(
    service: RunningService, client: ServiceClient, market: FakeMarket
) -> None:
    monitor_id = await _likely_sales_only(service, client, market)
    run, result = await _run(client, {"monitor_id": monitor_id, "include_likely_sales": False})
    async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
        record = await store.runs.analysis(run["analysis_id"], None)
        assert record is not None
        document = json.loads(record.result_json)
        for key in [k for k in document if "sales_basis" in k or k.endswith("_requested")]:
            del document[key]
        old = await store.runs.add_analysis(
            NewAnalysis(
                analysis_id="an_stored_before",
                workspace_id=record.workspace_id,
                run_id=None,
                source="import",
                source_url=None,
                result_json=json.dumps(document),
            )
        )

    answer = (await client.get(f"/api/analyses/{old.id}")).json()["result"]
    assert (answer["sales_basis"], answer["sales_basis_reason"]) == (
        "confirmed",
        "stored_before_auto",
    )
    assert "the default when this analysis was made" in answer["sales_basis_note"]
    assert answer["niches"] == result["niches"]
    page = await client.get(f"/analyses/{old.id}")
    assert page.status_code == 200
    assert 'data-sales-basis="confirmed"' in page.text
    assert "the default when this analysis was made" in page.text
