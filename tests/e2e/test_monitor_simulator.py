"""A monitor against the marketplace simulator, over real sockets, with the real scrapers
client and a real database: bootstrap, transitions matching the simulator's ground truth,
faults survived, and a restart of the service that loses and duplicates nothing."""

from __future__ import annotations

from collections import defaultdict

import httpx
import trio

from api.settings import Settings
from scrapers.simulator import SimulatorConfig, serve_simulator
from tests.api.helpers import signed_in
from tests.conftest import start_service
from tests.waiting import eventually

SPEED = 3600.0  # one simulated hour per real second


async def _monitor(client: httpx.AsyncClient, monitor_id: str) -> dict[str, object]:
    return (await client.get(f"/api/monitoring/{monitor_id}")).json()  # type: ignore[no-any-return]


async def _actor_paused(ops: httpx.AsyncClient, monitor_id: str) -> bool:
    """Whether the monitor's actor sits idle, paused (no poll in flight)."""
    actors = (await ops.get("/api/ops/actors")).json()["actors"]
    return [a["state"] for a in actors if a["monitor_id"] == monitor_id] == ["paused"]


async def _polls_reach(client: httpx.AsyncClient, monitor_id: str, polls: int) -> None:
    with trio.fail_after(60):
        while int((await _monitor(client, monitor_id))["polls"]) < polls:  # type: ignore[call-overload]
            await trio.sleep(0.1)


async def test_monitor_tracks_the_simulator_truth_across_faults_and_a_restart(
    settings: Settings, nursery: trio.Nursery
) -> None:
    origin: str = await nursery.start(
        serve_simulator, SimulatorConfig(seed=7, speed=SPEED, n_listings=400)
    )
    settings = settings.model_copy(
        update={"market_origins": (origin,), "market_rate": 0, "min_poll_seconds": 1}
    )
    async with httpx.AsyncClient(base_url=origin) as sim:
        # First life of the service: bootstrap and a few polls.
        async with trio.open_nursery() as first_life:
            service, stop = await start_service(first_life, settings)
            client = service.client()
            email = await signed_in(client)
            started = await client.post(
                "/api/monitoring/start",
                json={"url": f"{origin}/catalog?order=newest_first", "interval_seconds": 1},
            )
            assert started.status_code == 202 and started.json()["status"] == "paused"
            monitor_id = started.json()["id"]
            await _polls_reach(client, monitor_id, 4)
            assert (await _monitor(client, monitor_id))["status"] == "active"
            await client.aclose()
            stop.set()

        # Faults while the service is down and after: 5xx, 429 and a truncated page.
        faults = await sim.post(
            "/__sim__/faults", json={"first_5xx": 2, "first_429": 1, "first_truncated": 1}
        )
        assert faults.status_code == 200

        # Second life: the monitor is re-spawned from the database and goes on.
        service, stop = await start_service(nursery, settings)
        async with service.client() as client, service.client() as ops:
            await signed_in(ops, "ops@example.com")  # an operator: it may read the actors
            login = await client.post(
                "/api/auth/login", json={"email": email, "password": "correct horse battery"}
            )
            assert login.status_code == 200
            before = int((await _monitor(client, monitor_id))["polls"])  # type: ignore[call-overload]
            await _polls_reach(client, monitor_id, before + 6)
            paused = await client.post(f"/api/monitoring/{monitor_id}/pause")
            assert paused.json()["status"] == "paused"
            # The actor has taken the pause (a poll it had in flight finished) and sits idle.
            await eventually(lambda: _actor_paused(ops, monitor_id), within=60)
            monitor = await _monitor(client, monitor_id)
            export = (await client.get(f"/api/monitoring/{monitor_id}/export")).json()
        stop.set()

        truth = (await sim.get("/__sim__/truth")).json()
        log = (await sim.get("/__sim__/requests")).json()["requests"]

    assert monitor["status"] == "paused"
    counts = monitor["counts"]
    assert isinstance(counts, dict) and counts["open"] > 50
    assert counts["sold"] > 0, counts  # a day and more of simulated time: things sold

    histories = {item["id"]: item["history"] for item in truth["listings"]}
    # Every transition recorded happened in the marketplace.
    for event in export["events"]:
        if event["kind"] == "state":
            states = {state for _, state in histories[event["item_id"]]}
            assert event["to_state"] in states, event
    # Nothing recorded twice: per listing, no two consecutive events announce the same state,
    # and every listing was "new" exactly once.
    news: defaultdict[int, int] = defaultdict(int)
    last_state: dict[int, str] = {}
    for event in export["events"]:
        item = event["item_id"]
        if event["kind"] == "new":
            news[item] += 1
            last_state[item] = "open"
        elif event["kind"] == "state":
            assert last_state.get(item) != event["to_state"], event
            last_state[item] = event["to_state"]
    assert set(news.values()) == {1}
    assert len(news) == len(export["listings"])
    # Nothing lost: at the simulated time of the last request, every listing the monitor
    # tracked as sold is sold in truth, and every listing truly sold by then that the
    # monitor knew was live at its previous poll is recorded as sold.
    last_sim_time = max(entry["sim_time"] for entry in log if entry["path"].startswith("/api/"))

    def true_state(item_id: int, at: float) -> str | None:
        state = None
        for when, name in histories[item_id]:
            if when <= at:
                state = name
        return state

    recorded = {listing["item_id"]: listing["state"] for listing in export["listings"]}
    for item_id, state in recorded.items():
        if state == "sold":
            assert true_state(item_id, last_sim_time) == "sold", item_id
    window = 3 * SPEED  # a poll or two of simulated time
    for item_id, state in recorded.items():
        settled = true_state(item_id, last_sim_time - window)
        if settled == "sold":
            assert state == "sold", (item_id, state, histories[item_id])
    # The faults were met and survived: error statuses seen, polls went on.
    statuses = [entry["status"] for entry in log]
    assert 429 in statuses and any(500 <= s < 600 for s in statuses)
    assert not any(entry.get("early") for entry in log)  # never inside a Retry-After window
