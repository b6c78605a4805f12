"""`kill -9` in the middle of polls, under heavy marketplace faults, for a simulated day.

`nichescope serve` runs as a child process against the marketplace simulator (in this
process), which answers 15 % of the requests with a 503, 30 % with a truncated body, 20 % a
second late, garbles items (ids as strings, missing fields) and sends the odd 429 (more would
only slow the client down, see `FAULTS`). Three monitors poll every second. The service is
SIGKILLed while one of its marketplace requests is unanswered (a poll half done), started
again on the same database, SIGKILLed again at an arbitrary moment (drawn from a seeded rng)
and started again, until the recorded polls span a simulated day; then killed for good and
the database is read.

What must hold: the service comes back and resumes the monitors by itself; fault errors are
counted on the monitors and never stop them for good; the API never answers 5xx; and in the
database, checked against the simulator's ground truth (as tests/e2e does it): every poll is
whole, no event is duplicated, every state change happened in the market, in order and not
before it happened (so no false sale), every listing's events chain to its state, and nothing
the last polls saw is missing.

403 block pages are left out: one makes the client stay away from the origin for two minutes
(`block_cool_down`, not a setting), which no run of a minute and a half can absorb.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
import trio
import trio_asyncio

from api.settings import Settings
from bench._common import free_port
from scrapers.simulator import (
    Faults,
    SimulatorApp,
    SimulatorConfig,
    World,
    create_simulator_app,
    serve_app,
)
from store import ListingEventRecord, ListingRecord, MonitorRecord, PollRecord, Store, open_store
from tests.api.helpers import signed_in
from tests.conftest import RunningService, ServiceClient
from tests.e2e.accuracy import DAY, _is_market, _state_at, _wall
from tests.hardening.retry_windows import sent_inside_a_window
from tests.waiting import eventually

pytestmark = [pytest.mark.postgres, pytest.mark.soak]

ROOT = Path(__file__).resolve().parents[2]
SPEED = 3600.0  # one simulated hour per real second: a simulated day in 24 s
CATEGORIES = (1904, 1206, 257)  # one monitor each: one or two feed pages per poll
FAULTS = Faults(
    # Five 5xx in a row open the client's circuit breaker for 30 s (the monitors then fail
    # fast, may go to `error` and are resumed by `Watch`): at 20 % roughly one run in 25
    # would lose half a minute so; at 15 %, roughly one in a hundred.
    rate_5xx=0.15,
    # Each 429 halves the client's pace and each success wins back 0.05 request/s (AIMD,
    # scrapers/_ratelimit.py): at 20 % it settles near 0.4 request/s, at 3 % near 2, and polls
    # come too seldom for a day in half a minute. Every restart meets one 429 for sure.
    rate_429=0.01,
    retry_after=1,  # the window holds every monitor of the origin back: keep it short
    rate_truncated=0.3,
    rate_slow=0.2,
    slow_seconds=1.0,
    ids_as_strings=0.2,
    rate_missing_fields=0.1,
)
# A recorded stamp comes from the service's wall clock at the end of the poll that saw the
# change; the simulated time of that sight is earlier. Half a real second covers the mapping.
SLACK = 0.5 * SPEED
# A listing that left the feed is asked about at every poll until a confirmation succeeds
# (about one in ten fails here: a truncated detail, then a truncated item page): four polls
# after it is gone, it is recorded gone.
SETTLE_POLLS = 4
# The second kill comes at a moment drawn from this seed: the same moment every run.
SECOND_KILL_SEED = 20260432
Story = list[tuple[str, float]]  # (state, simulated time) of one listing, in order


@dataclasses.dataclass
class ServiceProcess:
    """`python -m api.process.cli serve` in a child process, started again after each kill on the
    same port and database; every life's stderr (its log) goes to one file."""

    port: int
    database_url: str
    env: dict[str, str]
    log_path: Path
    process: trio.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        args = ["-m", "api.process.cli", "serve", "--port", str(self.port)]
        args += ["--database-url", self.database_url]
        with _appending(self.log_path) as log:
            self.process = await trio.lowlevel.open_process(
                [sys.executable, *args],
                cwd=ROOT,
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        # Ready means the database answers too: /health says 503 until it does.
        with trio.fail_after(45):
            async with httpx.AsyncClient(base_url=self.url, timeout=2) as probe:
                while True:
                    assert self.process.returncode is None, self.log_tail()
                    try:
                        if (await probe.get("/health")).status_code == 200:
                            return
                    except httpx.TransportError:
                        pass  # not listening yet
                    await trio.sleep(0.2)

    async def kill(self) -> None:
        """SIGKILL: no shutdown code runs; whatever was in flight stops where it was."""
        assert self.process is not None and self.process.returncode is None, self.log_tail()
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()
        assert self.process.returncode == -signal.SIGKILL, self.log_tail()

    async def close(self) -> None:
        """Kill it if it still runs (the test's `finally`), even while being cancelled."""
        with trio.CancelScope(shield=True):
            if self.process is not None and self.process.returncode is None:
                self.process.send_signal(signal.SIGKILL)
                await self.process.wait()

    def log_tail(self) -> str:
        return _read(self.log_path)[-4000:]


@contextmanager
def _appending(path: Path) -> Iterator[IO[bytes]]:
    # The child keeps its own descriptor: ours may be closed as soon as it is started.
    with path.open("ab") as handle:
        yield handle


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def watched_client(
    service: RunningService, server_errors: list[str], cookies: httpx.Cookies | None = None
) -> ServiceClient:
    """A client of the service that notes every 5xx answer (none may happen)."""

    async def note(response: httpx.Response) -> None:
        if response.status_code >= 500:
            await response.aread()
            request = response.request
            server_errors.append(f"{request.method} {request.url.path}: {response.text[:300]}")

    return service.client(event_hooks={"response": [note]}, cookies=cookies)


async def monitor_of(client: httpx.AsyncClient, monitor_id: str) -> dict[str, Any]:
    response = await client.get(f"/api/monitoring/{monitor_id}")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


@dataclasses.dataclass
class Watch:
    """The test's monitors, read over the API. One the policy put in `error` (after
    `monitor_max_errors` failed polls in a row: say, while the client's circuit breaker
    holds every request back for 30 s after five 5xx in a row) is resumed by hand, as its
    owner would, and counted."""

    ids: list[str]
    resumed: int = 0

    async def read(self, client: httpx.AsyncClient) -> list[dict[str, Any]]:
        monitors: list[dict[str, Any]] = []
        for monitor_id in self.ids:
            monitor = await monitor_of(client, monitor_id)
            if monitor["status"] == "error":
                resumed = await client.post(f"/api/monitoring/{monitor_id}/resume")
                assert resumed.status_code == 200, resumed.text
                monitor = resumed.json()
                assert monitor["status"] == "active", monitor
                self.resumed += 1
            monitors.append(monitor)
        return monitors

    async def polls(self, client: httpx.AsyncClient) -> dict[str, int]:
        return {m["id"]: int(m["polls"]) for m in await self.read(client)}

    async def polls_reach(
        self, client: httpx.AsyncClient, targets: dict[str, int], seconds: float
    ) -> None:
        """Until each monitor has recorded at least its target number of polls; on timeout,
        an `AssertionError` showing the monitors."""
        with trio.move_on_after(seconds):
            while any(n < targets[m] for m, n in (await self.polls(client)).items()):
                await trio.sleep(0.2)
            return
        monitors = await self.read(client)
        raise AssertionError(f"polls did not reach {targets} in {seconds} s: {monitors}")

    async def polls_span(
        self,
        client: httpx.AsyncClient,
        to_sim: Callable[[float], float],
        span: float,
        seconds: float,
    ) -> None:
        """Until every monitor's recorded polls span `span` simulated seconds (from its
        bootstrap to its last poll); `trio.TooSlowError` after `seconds`."""
        with trio.fail_after(seconds):
            while True:
                monitors = await self.read(client)
                first = min(to_sim(_wall(m["bootstrapped_at"])) for m in monitors)
                last = min(to_sim(_wall(m["last_poll_at"])) for m in monitors)
                if last - first >= span:
                    return
                await trio.sleep(0.5)


def unanswered(app: SimulatorApp) -> list[dict[str, Any]]:
    """The marketplace requests of the simulator's log not answered yet."""
    return [e for e in app.log[-50:] if e["status"] is None and _is_market(e)]


async def kill_mid_poll(service: ServiceProcess, app: SimulatorApp) -> None:
    """SIGKILL the service while one of its marketplace requests is unanswered, so a poll
    is half done (nothing of it committed yet)."""
    with trio.fail_after(60):
        while not unanswered(app):
            await trio.sleep(0.005)
    await service.kill()


async def restart_and_see_resumed(
    service: ServiceProcess,
    app: SimulatorApp,
    client: httpx.AsyncClient,
    sim: httpx.AsyncClient,
    watch: Watch,
    before: dict[str, int],
) -> None:
    """Start the service again; it must poll every monitor with no call but reads (two more
    recorded polls than before the kill: one may have been committed just before it).

    The first marketplace answers after the restart are faulty, so that every kind is met
    whatever the dice say: a 429, then truncated bodies, so that the first feed page fetched
    (every monitor is due at once) is truncated twice over and a failed poll is recorded.
    The dead service's requests the simulator still holds (a late answer) are answered
    first, so that none of them takes a fault of that burst.
    """
    await eventually(lambda: not unanswered(app), within=60, what="the dead life's requests")
    burst = {**FAULTS.to_json(), "first_429": 1, "first_truncated": 6}
    armed = await sim.post("/__sim__/faults", json=burst)
    assert armed.status_code == 200, armed.text
    await service.start()
    await watch.polls_reach(client, {m: n + 2 for m, n in before.items()}, 45)


@dataclasses.dataclass(frozen=True)
class Recorded:
    """One monitor as the database holds it once the service is gone."""

    monitor: MonitorRecord
    counts: dict[str, int]
    polls: list[PollRecord]  # by start
    events: list[ListingEventRecord]  # in the order they were written
    listings: dict[int, str]


async def load(store: Store, monitor_id: str) -> Recorded:
    monitor = await store.monitors.get(monitor_id, None)
    assert monitor is not None
    polls = [p async for p in store.monitors.iter_polls(monitor_id)]
    events = [e async for e in store.monitors.iter_events(monitor_id)]
    rows: list[ListingRecord] = [row async for row in store.monitors.iter_listings(monitor_id)]
    counts = await store.monitors.state_counts(monitor_id)
    return Recorded(monitor, counts, polls, events, {r.item_id: r.state for r in rows})


def assert_whole_and_unique(rec: Recorded) -> None:
    """Every poll whole (as `record_poll` writes one), no event twice, each listing's events
    chaining from its one `new` to its stored state, the monitor's counters right."""
    ok = [p for p in rec.polls if p.error is None]
    by_poll: dict[str, list[ListingEventRecord]] = defaultdict(list)
    for event in rec.events:
        by_poll[event.poll_id].append(event)
    assert set(by_poll) <= {p.id for p in ok}, "events of a poll not recorded as successful"
    for poll in ok:
        written = by_poll.get(poll.id, [])
        changed = len({e.item_id for e in written if e.kind != "new"})
        assert (sum(e.kind == "new" for e in written), changed) == (poll.new, poll.changed)
    assert rec.monitor.polls == len(ok)
    assert rec.monitor.total_errors == len(rec.polls) - len(ok)
    # One actor per monitor across lives: its successful polls never overlap in time.
    for earlier, later in itertools.pairwise(ok):
        assert earlier.finished_at <= later.started_at, (earlier, later)

    news = Counter(e.item_id for e in rec.events if e.kind == "new")
    assert set(news) == set(rec.listings) and set(news.values()) == {1}, news.most_common(3)
    replayed: dict[int, str] = {}
    for event in rec.events:
        if event.kind == "new":
            replayed[event.item_id] = "open"
        elif event.kind == "state":
            assert event.from_state == replayed[event.item_id] != event.to_state, event
            assert event.to_state is not None
            replayed[event.item_id] = event.to_state
    assert replayed == rec.listings
    grouped = Counter(rec.listings.values())
    assert rec.counts == {state: grouped.get(state, 0) for state in rec.counts}


def assert_true_to_the_market(
    rec: Recorded,
    truth: dict[int, dict[str, Any]],
    category_id: int,
    to_sim: Callable[[float], float],
) -> None:
    """Against the simulator's truth: every recorded story is a subsequence of the listing's
    true history, each step no earlier than it happened (no false sale, no made-up or
    repeated transition), and what the last `SETTLE_POLLS` successful polls saw is there."""
    stories: dict[int, Story] = defaultdict(list)
    for event in rec.events:
        if event.kind in ("new", "state"):
            state = "open" if event.kind == "new" else str(event.to_state)
            stories[event.item_id].append((state, to_sim(event.at.timestamp())))
    for item_id, story in stories.items():
        history: list[list[Any]] = truth[item_id]["history"]
        position = -1
        for state, at in story:
            position = next(
                (
                    j
                    for j in range(position + 1, len(history))
                    if history[j][1] == state and history[j][0] <= at + SLACK
                ),
                -2,
            )
            assert position >= 0, f"listing {item_id}: recorded {story}, market did {history}"

    ok = [p for p in rec.polls if p.error is None]
    assert len(ok) >= SETTLE_POLLS
    since = to_sim(ok[-SETTLE_POLLS].started_at.timestamp()) - SLACK
    until = to_sim(ok[-1].finished_at.timestamp()) + SLACK
    for item_id, state in rec.listings.items():
        # Gone before the settling polls: each of them asked about it.
        gone = _state_at(truth[item_id]["history"], since)
        if gone in ("sold", "deleted"):
            assert state == gone, (item_id, state, truth[item_id]["history"])
    steady = {
        item_id
        for item_id, item in truth.items()
        if item["category_id"] == category_id
        and _state_at(item["history"], since) == "open"
        and not any(since < when <= until for when, _ in item["history"])
    }
    assert steady, "nothing to compare: no listing stayed open through the settling polls"
    missing = {i for i in steady if rec.listings.get(i) != "open"}
    assert not missing, f"open all through the settling polls, not recorded open: {missing}"


async def test_kill_9_mid_poll_under_faults_loses_and_duplicates_nothing(
    postgres_url: str, tmp_path: Path, nursery: trio.Nursery
) -> None:
    config = SimulatorConfig(seed=11, speed=SPEED, n_listings=1000, faults=FAULTS)
    app = create_simulator_app(World(config))
    origin: str = await nursery.start(serve_app, app)
    outbox = tmp_path / "outbox"
    quotas = {"trial": {"active_monitors": 10, "min_poll_seconds": 1}}
    env = {
        **os.environ,
        "NICHESCOPE_SECRET_KEY": secrets.token_urlsafe(32),  # sessions survive the kills
        # A stable node id, as a deployment gives each node: the restarted node takes its
        # leases back at once instead of waiting for the dead incarnation's to lapse.
        "NICHESCOPE_NODE_ID": "kill-test-node",
        "NICHESCOPE_MARKET_ORIGINS": origin,
        "NICHESCOPE_MARKET_RATE": "0",
        "NICHESCOPE_MIN_POLL_SECONDS": "1",
        "NICHESCOPE_COOKIE_SECURE": "0",
        "NICHESCOPE_OUTBOX_DIR": str(outbox),
        "NICHESCOPE_PLAN_QUOTAS": json.dumps(quotas),
    }
    service = ServiceProcess(free_port(), postgres_url, env, tmp_path / "service.log")
    # The helpers read the outbox through a `RunningService` (to confirm the trial by mail).
    running = RunningService(
        url=service.url,
        settings=Settings(database_url=postgres_url, outbox_dir=outbox, cookie_secure=False),
    )
    server_errors: list[str] = []
    try:
        async with httpx.AsyncClient(base_url=origin, timeout=30) as sim:
            # One (wall, simulated) pair of the same instant (the simulator runs on this
            # process's trio clock), to put the service's wall-clock stamps on the market's.
            clock = (await sim.get("/__sim__/clock")).json()
            wall_ref = time.time() - (trio.current_time() - float(clock["clock"]))
            sim_ref = float(clock["sim_time"])

            def to_sim(wall: float) -> float:
                return sim_ref + (wall - wall_ref) * SPEED

            await service.start()
            async with watched_client(running, server_errors) as client:
                await signed_in(client)
                watch = Watch([])
                for category in CATEGORIES:
                    url = f"{origin}/catalog?catalog[]={category}&order=newest_first"
                    body = {"url": url, "interval_seconds": 1}
                    started = await client.post("/api/monitoring/start", json=body)
                    assert started.status_code == 202, started.text
                    watch.ids.append(str(started.json()["id"]))
                await watch.polls_reach(client, {m: 3 for m in watch.ids}, 45)
                before = await watch.polls(client)
                cookies = client.cookies  # the session outlives the kills (it is stored)

            # First kill: mid-poll, a marketplace request unanswered.
            await kill_mid_poll(service, app)
            async with watched_client(running, server_errors, cookies) as client:
                await restart_and_see_resumed(service, app, client, sim, watch, before)
                # Second kill: at an arbitrary moment (an HTTP wait, a commit, between polls),
                # drawn from a seeded rng.
                await trio.sleep(random.Random(SECOND_KILL_SEED).uniform(0.0, 2.0))
                before = await watch.polls(client)
                await service.kill()
                await restart_and_see_resumed(service, app, client, sim, watch, before)

                # On until the recorded polls span a simulated day.
                await watch.polls_span(client, to_sim, DAY, 90)
                monitors = await watch.read(client)
            await service.kill()  # and for good: the database as the last kill left it
            truth_doc = (await sim.get("/__sim__/truth")).json()
            log: list[dict[str, Any]] = (await sim.get("/__sim__/requests")).json()["requests"]

        async with trio_asyncio.open_loop(), open_store(postgres_url) as store:
            recorded = [await load(store, m) for m in watch.ids]
    finally:
        await service.close()

    service_log = _read(service.log_path)
    assert not server_errors, server_errors
    assert "Traceback" not in service_log, service.log_tail()
    assert all(m["status"] == "active" for m in monitors), monitors

    truth = {int(item["id"]): item for item in truth_doc["listings"]}
    for rec, category in zip(recorded, CATEGORIES, strict=True):
        assert_whole_and_unique(rec)
        assert_true_to_the_market(rec, truth, category, to_sim)
    ok_polls = [p for rec in recorded for p in rec.polls if p.error is None]
    span = to_sim(max(p.finished_at for p in ok_polls).timestamp()) - to_sim(
        min(p.started_at for p in ok_polls).timestamp()
    )
    assert span >= DAY
    # The faults were met (and counted on the monitors), and the market moved meanwhile.
    assert sum(rec.monitor.total_errors for rec in recorded) >= 2  # one a restart at least
    statuses = Counter(int(entry["status"] or 0) for entry in log)
    assert statuses[429] > 0 and statuses[503] > 0, statuses
    # Never inside a Retry-After window, but for requests already in flight when the 429 went
    # out: two per host, and a site's session spans its www and API hosts.
    assert sent_inside_a_window(log, in_flight_at_most=3) == []
    moves = Counter(e.to_state for rec in recorded for e in rec.events if e.kind == "state")
    assert moves["sold"] >= 3, moves
