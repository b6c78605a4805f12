"""The demo's market (`make run`): a sample month that looks like a market, and a simulated
market that a restart continues instead of drawing anew (issue 32, items 2 and 7)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from api.process.cli import simulator_port
from api.process.demo import demo_var
from api.process.demo_market import (
    DAY,
    ID_BLOCK,
    RENEW_AFTER_DAYS,
    SAVE_SECONDS,
    MarketState,
    load_state,
    market_file,
    plan_market,
    save_state,
)
from api.process.demo_sample import LIVE_LABEL, record_sample
from api.process.node import open_node
from api.settings import Settings
from scrapers.simulator._catalogue import CATALOGUE, SIZES
from tests.api.demo_helpers import free_pair, signed_in_demo, sim, start_demo
from tests.conftest import new_workspace

NOW = 1_790_000_000.0
SIZE_LABELS = {c.id: {label for s, label in SIZES if s in dict(c.sizes)} for c in CATALOGUE}


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    path = tmp_path / "demo.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


def test_a_first_start_draws_a_market_on_the_wall_clock() -> None:
    plan = plan_market(None, NOW)
    assert plan.config.start == plan.config.clock_at == NOW
    assert plan.story == "a new market"


def test_a_kept_market_continues_from_where_its_clock_stopped(tmp_path: Path) -> None:
    kept = MarketState(seed=7, start=NOW - DAY, first_id=5_000_000_000,
                       reached=NOW + 2 * DAY, saved_at=NOW)  # fmt: skip
    path = market_file(tmp_path)
    save_state(path, kept)
    assert load_state(path) == kept
    plan = plan_market(load_state(path), NOW + 3600)  # an hour later
    config = plan.config
    assert (config.seed, config.start, config.first_id) == (7, kept.start, kept.first_id)
    # Never behind what a monitor may have read after the last write, plus the hour down.
    assert config.clock_at == kept.reached + SAVE_SECONDS * config.speed + 3600
    assert plan.story.startswith("continued")


def test_a_market_past_its_days_is_renewed_with_ids_above_the_old_ones() -> None:
    kept = MarketState(seed=7, start=NOW - 30 * DAY, first_id=5_000_000_000,
                       reached=NOW - 30 * DAY + RENEW_AFTER_DAYS * DAY, saved_at=NOW)  # fmt: skip
    plan = plan_market(kept, NOW)
    assert plan.config.seed == 8 and plan.config.first_id == kept.first_id + ID_BLOCK
    assert plan.config.start == plan.config.clock_at == NOW


def test_the_simulator_moves_with_the_service_port() -> None:
    """`make run PORT=8080` serves the simulator on 8180 (its API on 8181), not on 8100 where
    another demo may already be; `SIMULATOR_PORT` (`--simulator-port`) wins."""
    assert simulator_port(8000, None) == 8100 and simulator_port(8080, None) == 8180
    assert simulator_port(8080, 9000) == 9000 and simulator_port(0, None) == 0


def test_an_unreadable_state_starts_a_new_market(tmp_path: Path) -> None:
    path = market_file(tmp_path)
    path.write_text("{not json")
    assert load_state(path) is None
    path.write_text(json.dumps({"seed": 7}))
    assert load_state(path) is None


async def test_the_sample_month_spans_the_market_and_rarely_sells_everything(
    settings: Settings,
) -> None:
    """The demo's sample month, recorded and analysed as on a first `make run`: its top 25
    niches come from at least four categories, at most three of them sell 100%, and no niche
    has a size its category does not have (no "Coats · size 43", no sized bags)."""
    async with open_node(settings, role="serve") as (store, engine):
        workspace_id = await new_workspace(store)
        sample = await record_sample(store, engine, workspace_id, "http://127.0.0.1:9")
        with trio.fail_after(120):
            while (run := await store.runs.get(sample.run_id, None)) is not None and run.state in (
                "queued",
                "running",
            ):
                await trio.sleep(0.2)
        assert run is not None and run.state == "succeeded" and run.analysis_id, run
        document = await store.runs.analysis_result(run.analysis_id, workspace_id)
    assert document is not None
    niches = json.loads(document)["niches"]
    top = niches[:25]
    categories = Counter(n["niche"]["category_id"] for n in top)
    sold_out = [n for n in top if n["sell_through"] == 1.0]
    assert len(top) == 25 and len(categories) >= 4, categories
    assert len(sold_out) <= 3, [(n["niche"], n["sold"]) for n in sold_out]
    for niche in niches:
        key = niche["niche"]
        if key["size"] is not None:
            assert key["size"] in SIZE_LABELS[key["category_id"]], key


async def _live_monitor(client: httpx.AsyncClient, polls: int) -> dict[str, Any]:
    """The demo's live monitor once it has made `polls` polls (it appears after the sample's
    first poll is recorded)."""
    live: list[dict[str, Any]] = []
    with trio.move_on_after(150):
        while True:
            listed = (await client.get("/api/monitoring")).json()["monitors"]
            live = [m for m in listed if m["label"] == LIVE_LABEL]
            if live and live[0]["polls"] >= polls:
                return live[0]
            await trio.sleep(0.5)
    raise AssertionError(f"the live monitor did not reach {polls} polls: {live}")


@pytest.mark.soak
async def test_a_restarted_demo_continues_its_market(
    settings: Settings, nursery: trio.Nursery
) -> None:
    """Start the demo, let its live monitor poll, stop it, start it again on the same `var/`:
    the simulator shows the same listings under the same ids, its clock goes on from where
    it stopped, and the live monitor sees listings published since within two polls. Before,
    a restart drew the market anew from the wall clock: listings the monitor knew were not
    yet published, and nothing new came for minutes."""
    settings = settings.model_copy(update={"page_cap": 2})  # a lighter live monitor
    port = free_pair()
    origin = f"http://127.0.0.1:{port}"
    url, stop, stopped = await start_demo(nursery, settings, port)
    async with signed_in_demo(url, settings) as client:
        live = await _live_monitor(client, polls=1)
        before = (await client.get(f"/api/monitoring/{live['id']}/export")).json()
        seen = {int(row["item_id"]): row for row in before["listings"]}
        clock_before = float((await sim(origin, "/__sim__/clock"))["sim_time"])
    stop.set()
    with trio.fail_after(60):
        await stopped.wait()
    kept = load_state(market_file(demo_var(settings)))
    assert kept is not None and kept.reached >= clock_before

    url, stop, stopped = await start_demo(nursery, settings, port)
    async with signed_in_demo(url, settings) as client:
        assert float((await sim(origin, "/__sim__/clock"))["sim_time"]) >= kept.reached
        ids = ",".join(str(i) for i in sorted(seen))
        truth = {item["id"]: item for item in (await sim(origin, f"/__sim__/truth?ids={ids}"))[
            "listings"
        ]}  # fmt: skip
        assert set(truth) == set(seen)  # every listing the monitor knew, the same listing
        # at a price it asked (its seller may have cut it since the monitor's poll)
        assert all(Decimal(str(seen[i]["price"])) in {Decimal(p) for _, p in truth[i]["prices"]}
                   for i in seen)  # fmt: skip
        polls = int(live["polls"])
        after = await _live_monitor(client, polls=polls + 2)
        export = (await client.get(f"/api/monitoring/{after['id']}/export")).json()
        new = [int(row["item_id"]) for row in export["listings"] if int(row["item_id"]) not in seen]
        assert new, "the live monitor saw nothing new within two polls of the restart"
        published = await sim(origin, f"/__sim__/truth?ids={','.join(map(str, new))}")
        fresh = [i for i in published["listings"] if i["published_at"] > clock_before]
        assert fresh, "no listing published since the restart was seen within two polls"
        assert after["counts"]["deleted"] >= live["counts"]["deleted"]
    stop.set()
