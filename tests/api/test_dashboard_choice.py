"""The dashboard's analysis is chosen, not the latest (#32 item 1), over real sockets on both
databases: the pinned one, else the most recent above the trust floor (>= 7 days of history
and >= 30 sales), else the most recent with its caveat; a pin survives new analyses and goes
with its analysis; every analysis is named after its monitor's label, never a raw URL."""

from __future__ import annotations

import uuid
from datetime import timedelta

import trio_asyncio

from engine import decide_poll
from store import ObservedListing, PollOutcome, open_store
from tests.api.dashboard_helpers import monitor_analysis, workspace_of
from tests.api.helpers import assert_envelope, signed_in
from tests.conftest import RunningService, ServiceClient, new_monitor

FLOOR = "≥ 7 days of history and ≥ 30 sales"
ZARA_URL = "https://www.vinted.fr/catalog?catalog[]=1904&search_text=zara"


async def _two_analyses(service: RunningService, workspace_id: str) -> tuple[str, str, str]:
    """A month's analysis of "Coats in Lyon", then one of an unnamed monitor's few hours;
    returns their ids and the newer one's run."""
    async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
        month, _ = await monitor_analysis(
            store, workspace_id, days=30.0, sales=400, label="Coats in Lyon"
        )
        hours, run = await monitor_analysis(store, workspace_id, days=0.2, sales=3, url=ZARA_URL)
    return month, hours, run


async def test_the_latest_analysis_with_enough_evidence_is_shown(
    service: RunningService, client: ServiceClient
) -> None:
    await signed_in(client)
    empty = (await client.get("/api/dashboard")).json()
    assert empty["analysis"] is None and empty["newer_analysis"] is None
    month, hours, _ = await _two_analyses(service, await workspace_of(client))

    board = (await client.get("/api/dashboard")).json()
    shown = board["analysis"]
    assert shown["id"] == month and shown["title"] == "Coats in Lyon"
    assert shown["chosen_by"] == "trusted" and shown["caveat"] is None
    assert shown["evidence_depth"] == {"days": 30.0, "sales": 400}
    assert shown["trust_floor"] == {
        "min_days": 7.0, "min_sales": 30, "cleared": True, "text": FLOOR
    }  # fmt: skip
    assert board["top_niches"][0]["niche"]["brand"] == "Zara"
    # The newer one is named, with what it rests on, so nobody wonders where it went.
    newer = board["newer_analysis"]
    assert newer["id"] == hours
    assert newer["title"] == "Catalogue of vinted.fr: “zara”, 1 category"
    assert "0.2 days of history and 3 sales" in newer["caveat"] and FLOOR in newer["caveat"]

    # Asked for by its run, an analysis is shown whatever it rests on, with its caveat.
    listed = (await client.get("/api/analyses")).json()["analyses"]
    run_of = {a["id"]: a["run_id"] for a in listed}
    asked = (await client.get("/api/dashboard", params={"run_id": run_of[hours]})).json()
    assert asked["analysis"]["id"] == hours and asked["analysis"]["chosen_by"] == "asked"
    assert asked["analysis"]["caveat"].startswith(f"Below the trust floor ({FLOOR})")
    # Names, never a raw URL, wherever analyses are listed.
    assert all("://" not in a["title"] for a in listed), listed

    page = (await client.get("/dashboard")).text.replace("\N{NO-BREAK SPACE}", " ")
    assert 'data-dashboard-choice="trusted"' in page and "Coats in Lyon" in page
    assert "data-newer-analysis" in page and "0.2 days of history and 3 sales" in page
    assert f"the most recent analysis with enough evidence to trust ({FLOOR})" in page


async def test_below_the_floor_the_latest_shows_with_its_caveat(
    service: RunningService, client: ServiceClient
) -> None:
    await signed_in(client)
    workspace_id = await workspace_of(client)
    async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
        hours, _ = await monitor_analysis(store, workspace_id, days=0.2, sales=3, label="Live")
    shown = (await client.get("/api/dashboard")).json()["analysis"]
    assert shown["id"] == hours and shown["chosen_by"] == "latest"
    assert shown["trust_floor"]["cleared"] is False
    assert shown["caveat"] == (
        f"Below the trust floor ({FLOOR}): this analysis rests on 0.2 days of history and 3 "
        "sales, so its ranking can change completely as evidence comes in."
    )
    page = (await client.get("/dashboard")).text
    assert "data-trust-caveat" in page and "No analysis clears the floor yet" in page


async def test_a_pin_wins_until_unpinned_or_deleted(
    service: RunningService, client: ServiceClient
) -> None:
    await signed_in(client)
    month, hours, hours_run = await _two_analyses(service, await workspace_of(client))
    assert (await client.get("/api/dashboard/pin")).json() == {"analysis_id": None}

    pinned = await client.put("/api/dashboard/pin", json={"analysis_id": hours})
    assert pinned.status_code == 200 and pinned.json() == {"analysis_id": hours}
    assert (await client.get("/api/dashboard/pin")).json() == {"analysis_id": hours}
    shown = (await client.get("/api/dashboard")).json()
    assert shown["analysis"]["id"] == hours and shown["analysis"]["chosen_by"] == "pinned"
    assert shown["analysis"]["caveat"] is not None  # pinned, and still below the floor
    assert shown["newer_analysis"] is None

    # Another workspace's analysis, or none, cannot be pinned; unknown fields are refused.
    async with service.client() as stranger:
        await signed_in(stranger)
        refused = await stranger.put("/api/dashboard/pin", json={"analysis_id": month})
        assert_envelope(refused, 404, "not_found")
    assert_envelope(
        await client.put("/api/dashboard/pin", json={"analysis_id": "an_none"}), 404, "not_found"
    )
    extra = await client.put("/api/dashboard/pin", json={"analysis_id": month, "x": 1})
    assert extra.status_code == 422
    assert (await client.get("/api/dashboard/pin")).json() == {"analysis_id": hours}

    unpinned = await client.delete("/api/dashboard/pin")
    assert unpinned.status_code == 204
    assert (await client.get("/api/dashboard")).json()["analysis"]["id"] == month
    assert (await client.delete("/api/dashboard/pin")).status_code == 204  # nothing pinned

    # Deleting the pinned analysis (with its run) lifts the pin.
    assert (await client.put("/api/dashboard/pin", json={"analysis_id": hours})).is_success
    assert (await client.delete(f"/api/runs/{hours_run}")).status_code == 200
    assert (await client.get("/api/dashboard/pin")).json() == {"analysis_id": None}
    shown = (await client.get("/api/dashboard")).json()["analysis"]
    assert shown["id"] == month and shown["chosen_by"] == "trusted"


async def test_an_import_is_named_after_its_exported_monitor(
    service: RunningService, client: ServiceClient
) -> None:
    await signed_in(client)
    workspace_id = await workspace_of(client)
    async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
        monitor = await new_monitor(store, workspace_id, url=ZARA_URL, label="Coats in Lyon")
        for minute in range(2):
            at = store.clock() + timedelta(minutes=minute)
            outcome = PollOutcome(
                poll_id=f"poll_{uuid.uuid4().hex}",
                started_at=at,
                finished_at=at,
                pages=1,
                seen=tuple(ObservedListing(i, brand="Zara") for i in range(1, 6)),
                confirmed=(),
                next_poll_at=at + timedelta(minutes=1),
            )
            await store.monitors.record_poll(monitor.id, outcome, decide=decide_poll)
    export = (await client.get(f"/api/monitoring/{monitor.id}/export")).json()
    imported = await client.post("/api/analysis/import-monitoring", json=export)
    assert imported.status_code == 201, imported.text
    assert imported.json()["title"] == "Coats in Lyon"
    # Unnamed, it is what its monitor's catalogue asked for, in words.
    export["monitor"]["label"] = None
    unnamed = await client.post("/api/analysis/import-monitoring", json=export)
    assert unnamed.json()["title"] == "Catalogue of vinted.fr: “zara”, 1 category"
    titles = [a["title"] for a in (await client.get("/api/analyses")).json()["analyses"]]
    assert sorted(titles) == sorted(["Coats in Lyon", unnamed.json()["title"]])
    # Two minutes of history, no sale: the latest, shown with its caveat.
    shown = (await client.get("/api/dashboard")).json()["analysis"]
    assert shown["chosen_by"] == "latest" and shown["evidence_depth"]["sales"] == 0
