"""Block pages (403) and rate limits (429) at high rates for a simulated day.

The kill test (test_kill_and_faults.py) keeps these two rare, because each one rightly makes
the client hold back: a 429 halves its pace and a 403 keeps it away from the origin for
`NICHESCOPE_MARKET_BLOCK_SECONDS`. Here they are the weather: a fifth of the marketplace's
answers are 429s and one in ten a block page, with the block window cut to a second so
that a day passes in half a minute, against the real service (PostgreSQL, the real
marketplace client) and the simulator.

What must hold: the monitors keep running (failed polls are recorded with their reason and
backed off; any that reach `error` are resumed, as their owner would); the API never answers
5xx and nothing crashes; no request is sent inside a Retry-After window; and once the
weather clears, the database is true to the market (as the kill test checks it): every poll
whole, no event twice, no made-up or early transition, nothing missing.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
import trio

from api.settings import Settings
from scrapers.simulator import Faults, SimulatorConfig, World, create_simulator_app, serve_app
from store import Store
from tests.api.helpers import signed_in
from tests.conftest import start_service
from tests.e2e.accuracy import DAY
from tests.hardening.retry_windows import sent_inside_a_window
from tests.hardening.test_kill_and_faults import (
    SETTLE_POLLS,
    Watch,
    assert_true_to_the_market,
    assert_whole_and_unique,
    load,
    watched_client,
)

pytestmark = [pytest.mark.postgres, pytest.mark.soak]

SPEED = 3600.0  # a simulated day in 24 real seconds
CATEGORIES = (1904, 1206, 257)
WEATHER = Faults(rate_429=0.2, retry_after=1, rate_403=0.1)


@pytest.fixture
def database_url(postgres_url: str) -> str:
    return postgres_url


async def test_blocks_and_rate_limits_all_day_lose_nothing(
    settings: Settings, store: Store, tmp_path: Path, nursery: trio.Nursery
) -> None:
    app = create_simulator_app(World(SimulatorConfig(seed=23, speed=SPEED, n_listings=1000)))
    origin: str = await nursery.start(serve_app, app)
    settings = settings.model_copy(
        update={
            "market_origins": (origin,),
            "market_rate": 0.0,
            "market_block_seconds": 1.0,
            "min_poll_seconds": 1,
            "monitor_max_errors": 5,
        }
    )
    server_errors: list[str] = []
    async with httpx.AsyncClient(base_url=origin, timeout=30) as sim:
        # Its own nursery: leaving it waits until the service has stopped, so that the
        # database is read with no poll still being written.
        async with trio.open_nursery() as service_nursery:
            service, stop = await start_service(service_nursery, settings)
            async with watched_client(service, server_errors) as client:
                clock = (await sim.get("/__sim__/clock")).json()
                wall_ref = time.time() - (trio.current_time() - float(clock["clock"]))
                sim_ref = float(clock["sim_time"])

                def to_sim(wall: float) -> float:
                    return sim_ref + (wall - wall_ref) * SPEED

                await signed_in(client)
                watch = Watch([])
                for category in CATEGORIES:
                    url = f"{origin}/catalog?catalog[]={category}&order=newest_first"
                    started = await client.post(
                        "/api/monitoring/start", json={"url": url, "interval_seconds": 1}
                    )
                    assert started.status_code == 202, started.text
                    watch.ids.append(str(started.json()["id"]))
                await watch.polls_reach(client, {m: 2 for m in watch.ids}, 30)

                # The weather turns for a simulated day.
                assert (
                    await sim.post("/__sim__/faults", json=WEATHER.to_json())
                ).status_code == 200
                stormy_from = len(app.log)
                await watch.polls_span(client, to_sim, DAY, 90)
                stormy = app.log[stormy_from:]

                # It clears; the monitors settle.
                assert (
                    await sim.post("/__sim__/faults", json=Faults().to_json())
                ).status_code == 200
                before = await watch.polls(client)
                await watch.polls_reach(
                    client, {m: n + SETTLE_POLLS + 1 for m, n in before.items()}, 45
                )
                monitors = await watch.read(client)
            stop.set()
        # The truth is read once no poll can run: a poll between reading it and the stop
        # could record a listing published after it, which the truth would not know.
        truth_doc = (await sim.get("/__sim__/truth")).json()

    assert not server_errors, server_errors
    assert all(m["status"] == "active" for m in monitors), monitors
    statuses = Counter(int(entry["status"] or 0) for entry in stormy)
    assert statuses[429] >= 10 and statuses[403] >= 5, statuses
    assert not sent_inside_a_window(app.log), sent_inside_a_window(app.log)[:5]

    recorded = [await load(store, m) for m in watch.ids]
    errors = [p.error or "" for rec in recorded for p in rec.polls if p.error]
    assert any("Blocked" in e for e in errors), Counter(e.split(":")[0] for e in errors)
    assert sum(rec.monitor.total_errors for rec in recorded) == len(errors)
    truth = {int(item["id"]): item for item in truth_doc["listings"]}
    for rec, category in zip(recorded, CATEGORIES, strict=True):
        assert_whole_and_unique(rec)
        assert_true_to_the_market(rec, truth, category, to_sim)
    moves = Counter(e.to_state for rec in recorded for e in rec.events if e.kind == "state")
    assert moves["sold"] >= 3, moves
    print(  # the weather as met: for docs/reliability.md
        f"storm answers {dict(statuses)}, failed polls {len(errors)}, "
        f"resumed from error {watch.resumed}, state moves {dict(moves)}"
    )
