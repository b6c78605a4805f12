"""A trial with its real limits, over REST: a catalogue run reads as many listings as the plan
allows when none are named, a monitor's run analyses the monitor's whole history whatever it
holds, asking for more than the plan allows names the limit and the next plan up; monitor
lists carry counts and analyses are named after what they are of."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import trio

from api.naming import DELETED_MONITOR, analysis_title
from api.settings import Settings
from store import AnalysisRecord, MonitorRecord, RunRecord
from tests.api.helpers import assert_envelope, signed_in, wait_active, wait_finished_run
from tests.conftest import RunningService, start_service
from tests.engine.fake_market import FakeMarket

URL = "https://www.vinted.fr/catalog?catalog[]=1904"
# The trial's own quotas (200 listings per run, 2 monitors, 10 runs a day), polling allowed
# fast enough for a test.
TRIAL = {"trial": {"min_poll_seconds": 1}}
HELD = 306  # more listings than a trial's run may read, as in the report that found it


@pytest.fixture
async def trial_service(
    settings: Settings, market: FakeMarket, nursery: trio.Nursery
) -> AsyncIterator[RunningService]:
    running, stop = await start_service(
        nursery, settings.model_copy(update={"plan_quotas": TRIAL}), market
    )
    yield running
    stop.set()


async def test_a_trial_analyses_with_the_defaults(
    trial_service: RunningService, market: FakeMarket
) -> None:
    for item in range(1, HELD + 1):
        market.list(item, price=f"{10 + item % 7}.00")
    async with trial_service.client() as client:
        await signed_in(client)

        # A catalogue run naming no number (omitted or null) reads what the plan allows.
        for body in ({"url": URL}, {"url": URL, "max_items": None, "label": "Jeans"}):
            created = await client.post("/api/runs", json=body)
            assert created.status_code == 201, created.text
            assert created.json()["max_items"] == 200
        url_run = await wait_finished_run(client, created.json()["id"])
        assert url_run["state"] == "succeeded" and url_run["items"] == 200, url_run

        # More than the plan allows: the limit, the request and the next plan up, in words.
        refused = await client.post("/api/runs", json={"url": URL, "max_items": 960})
        body = assert_envelope(refused, 403, "quota_exceeded")
        message = body["error"]["message"]  # type: ignore[index]
        assert "reads at most 200 listings per run" in message and "960" in message, message
        assert "The Starter plan allows 1000 listings per run" in message, message
        assert "largest plan" not in message
        assert (body["upgrade_to"], body["limit"], body["requested"]) == ("starter", 200, 960)

        # A monitor holding more than 200 listings: its list entry counts them, and its run
        # analyses all of them (named too many or none, `max_items` does not apply).
        started = await client.post(
            "/api/monitoring/start", json={"url": URL, "label": "Levi's on the trial"}
        )
        monitor = await wait_active(client, started.json()["id"])
        (listed,) = (await client.get("/api/monitoring")).json()["monitors"]
        assert listed["counts"] == {
            "open": HELD,
            "reserved": 0,
            "sold": 0,
            "deleted": 0,
            "likely_sold": 0,
        }
        assert (
            listed["counts"]
            == (await client.get(f"/api/monitoring/{monitor['id']}")).json()["counts"]
        )
        runs = []
        for body in (
            {"monitor_id": monitor["id"]},
            {"monitor_id": monitor["id"], "max_items": 960},
        ):
            created = await client.post("/api/runs", json=body)
            assert created.status_code == 201, created.text
            assert created.json()["max_items"] is None
            runs.append(await wait_finished_run(client, created.json()["id"]))
        assert [(r["state"], r["items"]) for r in runs] == [("succeeded", HELD)] * 2, runs
        replay = await client.post(f"/api/runs/{runs[0]['id']}/replay")
        assert replay.status_code == 200 and replay.json()["max_items"] is None, replay.text

        # Analyses are named after their run's name, their monitor or their URL in words;
        # never an id.
        analyses = (await client.get("/api/analyses")).json()["analyses"]
        titles = {a["run_id"]: a["title"] for a in analyses}
        assert titles[url_run["id"]] == "Jeans"
        assert titles[runs[0]["id"]] == titles[runs[1]["id"]] == "Levi's on the trial"
        assert all(a["title"] and not a["title"].startswith("an_") for a in analyses)
        # The unnamed URL run is named after what its URL asks for, never the URL itself.
        assert not [t for t in titles.values() if "://" in t], titles
        assert "Catalogue of vinted.fr: 1 category" in titles.values(), titles
        one = (await client.get(f"/api/analyses/{runs[0]['analysis_id']}")).json()
        assert one["title"] == "Levi's on the trial"
        latest = (await client.get("/api/dashboard")).json()["analysis"]
        assert latest["title"] == analyses[0]["title"]


def test_the_naming_policy() -> None:
    now = datetime.now(UTC)
    monitor = MonitorRecord(
        id="mon_1",
        workspace_id="ws",
        label=None,
        url=URL,
        source_analysis_id=None,
        status="active",
        interval_seconds=60,
        page_cap=5,
        created_at=now,
        bootstrapped_at=now,
        last_poll_at=None,
        next_poll_at=None,
        consecutive_errors=0,
        total_errors=0,
        last_error=None,
        polls=1,
    )

    def run(source: str, label: str | None = None) -> RunRecord:
        fields = {f.name: None for f in dataclasses.fields(RunRecord)}
        fields.update(
            id="run_1",
            source=source,
            label=label,
            url=URL if source == "url" else None,
            monitor_id="mon_1" if source == "monitor" else None,
        )
        return RunRecord(**fields)  # type: ignore[arg-type]

    def analysis(source: str, url: str | None) -> AnalysisRecord:
        return AnalysisRecord(
            id="an_1",
            workspace_id="ws",
            run_id=None,
            source=source,  # type: ignore[arg-type]
            source_url=url,
            created_at=now,
            result_json="{}",
        )

    monitors_run = analysis("monitor", None)
    in_words = "Catalogue of vinted.fr: 1 category"  # URL, never shown raw
    assert analysis_title(monitors_run, run("monitor"), monitor) == in_words
    named = dataclasses.replace(monitor, label="Jeans")
    assert analysis_title(monitors_run, run("monitor"), named) == "Jeans"
    assert analysis_title(monitors_run, run("monitor", "Mine"), named) == "Mine"
    assert analysis_title(monitors_run, run("monitor"), None) == DELETED_MONITOR
    assert analysis_title(monitors_run, None, None) == DELETED_MONITOR
    assert analysis_title(analysis("scrape", URL), run("url"), None) == in_words
    assert analysis_title(analysis("import", URL), None, None) == in_words
    assert analysis_title(analysis("import", None), None, None) == "An imported monitor export"
    # An import is named after the label of the monitor it was exported from.
    exported = dataclasses.replace(analysis("import", URL), source_label="Coats in Lyon")
    assert analysis_title(exported, None, None) == "Coats in Lyon"
