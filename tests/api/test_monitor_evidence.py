"""Confirmed and likely sales through the API: listings, the monitor, its page, the export
(version 2, and version 1 still imported), and analyses with and without likely sales."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import httpx
import jsonschema
import trio_asyncio

from engine import decide_poll
from store import ConfirmedState, ObservedListing, PollOutcome, Store, open_store
from tests.api.helpers import active_monitor, wait_finished_run
from tests.conftest import RunningService, ServiceClient
from tests.engine.fake_market import FakeMarket
from tests.store.poll_helpers import failed_poll, todays_listing

URL = "https://www.vinted.fr/catalog?catalog[]=1904&brand_ids[]=53"
TODAY = todays_listing(1)


async def _poll(store: Store, monitor_id: str, minute: int, **kw: Any) -> None:
    at = store.clock() + timedelta(minutes=minute)
    outcome = PollOutcome(
        poll_id=f"poll_{uuid.uuid4().hex}",
        started_at=at,
        finished_at=at,
        pages=1,
        next_poll_at=at + timedelta(minutes=1),
        **{"seen": (), "confirmed": (), **kw},
    )
    await store.monitors.record_poll(monitor_id, outcome, decide=decide_poll)


async def _history(service: RunningService, monitor_id: str) -> None:
    """Item 2 becomes a likely sale (3 absences), item 3 a sale confirmed on its page, item
    1 carries today's fields; then a check fails as a suspected block."""
    async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
        rest = tuple(ObservedListing(i) for i in (4, 5, 6))
        for minute in range(3):
            await _poll(store, monitor_id, minute, seen=(TODAY, *rest), absent=(2,))
        confirmed = (ConfirmedState(3, "sold", "item_page"),)
        await _poll(store, monitor_id, 3, seen=(TODAY, *rest), confirmed=confirmed)
        await failed_poll(
            store,
            monitor_id,
            "an empty feed where the last check saw 4 listings",
            max_consecutive=99,
            kind="suspected_block",
        )


async def _import(client: httpx.AsyncClient, document: object, **params: str) -> dict[str, Any]:
    response = await client.post(
        "/api/analysis/import-monitoring", json=document, params=params or None
    )
    assert response.status_code == 201, response.text
    counts: dict[str, Any] = response.json()["result"]["counts"]
    return counts


async def test_confirmed_and_likely_sales_end_to_end(
    service: RunningService, client: ServiceClient, market: FakeMarket
) -> None:
    for item in range(1, 7):
        market.list(item)
    monitor_id = await active_monitor(client, URL, interval_seconds=None)
    await client.post(f"/api/monitoring/{monitor_id}/pause")
    await _history(service, monitor_id)

    page = await client.get(f"/api/monitoring/{monitor_id}/listings?state=all")
    listings = {x["item_id"]: x for x in page.json()["listings"]}
    assert (listings[2]["state"], listings[2]["state_evidence"]) == ("sold", "absence")
    assert listings[2]["likely"] is True and listings[2]["absent_polls"] == 3
    assert (listings[3]["state_evidence"], listings[3]["likely"]) == ("item_page", False)
    assert listings[1]["promoted"] is True and listings[4]["promoted"] is False
    assert (listings[1]["total_price"], listings[1]["service_fee"]) == ("13.35", "1.35")
    assert listings[1]["condition_raw"] == "Nuovo senza cartellino"
    assert listings[1]["category_name"] == "Donna Reggiseni sportivi"

    monitor = (await client.get(f"/api/monitoring/{monitor_id}")).json()
    assert monitor["counts"]["sold"] == 2 and monitor["counts"]["likely_sold"] == 1
    assert monitor["last_error_kind"] == "suspected_block"
    assert "blocking us" in monitor["last_error_explanation"]
    html = (await client.get(f"/monitors/{monitor_id}?state=all")).text
    assert "of which 1 likely" in html and "likely: gone from the feed" in html
    assert "blocking us" in html and "Promoted" in html

    export = (await client.get(f"/api/monitoring/{monitor_id}/export")).json()
    jsonschema.validate(export, (await client.get("/api/monitoring/export-schema")).json())
    assert export["version"] == 2 and export["counts"]["likely_sold"] == 1
    exported = {x["item_id"]: x for x in export["listings"]}
    assert exported[2]["state_evidence"] == "absence" and exported[2]["absent_polls"] == 3
    sales = {e["item_id"]: e["evidence"] for e in export["events"] if e["to_state"] == "sold"}
    assert sales == {2: "absence", 3: "item_page"}

    counts = await _import(client, export)
    assert (counts["sold"], counts["sold_confirmed"], counts["sold_likely"]) == (1, 1, 1)
    counts = await _import(client, export, include_likely_sales="true")
    assert (counts["sold"], counts["sold_confirmed"], counts["sold_likely"]) == (2, 1, 1)
    old = json.loads(json.dumps(export))
    old["version"] = 1
    for row in old["listings"]:
        del row["state_evidence"]
    for row in old["events"]:
        del row["evidence"]
    counts = await _import(client, old)  # version 1: every sale is a confirmed one
    assert (counts["sold"], counts["sold_confirmed"], counts["sold_likely"]) == (2, 2, 0)

    body = {"monitor_id": monitor_id, "include_likely_sales": True}
    run = (await client.post("/api/runs", json=body)).json()
    assert run["include_likely_sales"] is True
    run = await wait_finished_run(client, run["id"])
    analysis = (await client.get(f"/api/analyses/{run['analysis_id']}")).json()
    assert analysis["result"]["include_likely_sales"] is True
    assert analysis["result"]["counts"]["sold"] == 2
    replay = (await client.post(f"/api/runs/{run['id']}/replay")).json()
    assert replay["include_likely_sales"] is True
