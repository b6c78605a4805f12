"""Cluster failover (issue #9): three nodes, one `kill -9`ed mid-poll; nothing lost, nothing
polled twice, the API up throughout.

Three `nichescope serve` processes (node-a, node-b, node-c) share one PostgreSQL database and
poll the marketplace simulator (in this process) on loopback, with 3-second leases. 300
monitors, each on its own slice of the market (a category and a price range: see
`market_slices`), are started round-robin through the three nodes' APIs and poll every
10 s. Once every monitor has polled twice, node-b is SIGKILLed while the simulator holds one
of its feed answers back (a poll half done); the test goes on until every monitor has polled
again and at least `SETTLE_POLLS` times, then kills the survivors and reads the database.

What must hold:
- adoption: every monitor node-b held is leased by a survivor within two lease periods of
  the kill (sampled from the database every 0.1 s), and polled by it soon after it is both
  adopted and due (`RESUME_MARGIN`, beyond how late the survivors ran on their own monitors);
- never two nodes at once: in the simulator's request log, each monitor's polls (its feed
  request and the listings it then asked about, per client, i.e. per node) never overlap
  with another client's;
- no state event lost or duplicated, for every monitor: every poll whole, no event twice,
  each listing's story true to the simulator's ground truth (tests/hardening's checks);
- the API answers from every live node throughout: /health and an authenticated monitor
  read on each node every half second, no failure, no 5xx.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import re
import secrets
import statistics
import time
from collections import Counter, defaultdict
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio_asyncio

from api.settings import Settings
from bench._common import free_port
from scrapers.simulator import SimulatorConfig, World, serve_app
from store import Store, open_store
from tests.api.helpers import signed_in
from tests.cluster.market_slices import (
    FEED_PATH,
    RecordingSimulator,
    Slice,
    SliceIndex,
    overlaps,
    poll_spans,
    slice_market,
)
from tests.conftest import RunningService, ServiceClient, unique_email
from tests.hardening.test_kill_and_faults import (
    SETTLE_POLLS,
    ServiceProcess,
    _read,
    assert_true_to_the_market,
    assert_whole_and_unique,
    load,
    watched_client,
)

pytestmark = [pytest.mark.postgres, pytest.mark.soak]

NODES = ("node-a", "node-b", "node-c")
VICTIM = "node-b"
READER = "node-a"  # the survivor whose API the test reads progress from
SPEED = 3600.0  # a simulated hour per second: the market moves a day in 24 s
MONITORS = 300
INTERVAL = 10  # seconds between polls: 30 polls/s across the cluster, 15 per survivor
LEASE_SECONDS = 3.0
# After adoption, a monitor polls when it falls due; the ones that fell due while nobody held
# them (about a third: the gap is ~4 s of a 10 s interval) are all due at once on the adopting
# node, whose polls then queue for its two connections to the marketplace (measured: up to
# 3 s on a quiet machine, 10.6 s on a busy one, where the monitors the survivors kept ran
# late too). Within one interval of being adopted and due, past how late the survivors ran on
# the monitors they kept, no poll was skipped.
RESUME_MARGIN = float(INTERVAL)
CREATORS = len(NODES)  # monitors started at once (one per node): more only adds load
PROBE_EVERY = 0.5
PROBE_TIMEOUT = 5.0


_RECORD = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ |\[\d{4}-)")
# SQLAlchemy logs this, with a traceback, when a connection is closed while its operation is
# cancelled: an actor stopped mid-transaction because its node could not renew its leases in
# time (under load), which is the fence doing its job.
_CANCELLED_CLOSE = "Exception closing connection"


def logged_errors(text: str) -> tuple[list[str], int]:
    """A node log's ERROR records and tracebacks, but for cancelled connection closes (only
    counted)."""
    records: list[list[str]] = []
    for line in text.splitlines():
        if _RECORD.match(line) or not records:
            records.append([line])
        else:
            records[-1].append(line)
    errors, closes = [], 0
    for record in records:
        if " ERROR " in record[0] or " CRITICAL " in record[0] or "Traceback" in str(record):
            if _CANCELLED_CLOSE in record[0]:
                closes += 1
            else:
                errors.append("\n".join(record)[-3000:])
    return errors, closes


@dataclasses.dataclass
class Node:
    name: str
    process: ServiceProcess
    running: RunningService


@dataclasses.dataclass
class Prober:
    """Reads every live node's API every `PROBE_EVERY` s; a failure or a slow answer (over
    `PROBE_TIMEOUT`) from a node not yet killed is noted."""

    clients: dict[str, ServiceClient]
    monitor_ids: list[str]
    dead: set[str] = dataclasses.field(default_factory=set)
    probes: int = 0
    slowest: float = 0.0
    failures: list[str] = dataclasses.field(default_factory=list)

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            for name, client in self.clients.items():
                nursery.start_soon(self._probe_node, name, client)

    async def _probe_node(self, name: str, client: ServiceClient) -> None:
        turn = 0
        while name not in self.dead:
            monitor_id = self.monitor_ids[turn % len(self.monitor_ids)]
            for path in ("/health", f"/api/monitoring/{monitor_id}"):
                started = trio.current_time()
                try:
                    status: int | str = (await client.get(path, timeout=PROBE_TIMEOUT)).status_code
                except httpx.HTTPError as err:
                    status = repr(err)
                if name in self.dead:
                    return  # killed meanwhile: its answers no longer count
                self.probes += 1
                self.slowest = max(self.slowest, trio.current_time() - started)
                if status != 200:
                    self.failures.append(f"{name} GET {path}: {status}")
            turn += 1
            await trio.sleep(PROBE_EVERY)


async def monitor_list(client: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    response = await client.get("/api/monitoring")
    assert response.status_code == 200, response.text
    return {m["id"]: m for m in response.json()["monitors"]}


async def polls_reach(
    client: httpx.AsyncClient, targets: dict[str, int], seconds: float
) -> dict[str, dict[str, Any]]:
    """Until each monitor has recorded at least its target number of polls (read over the
    API, one list call per second); on timeout, an `AssertionError` naming the laggards."""
    with trio.move_on_after(seconds):
        while True:
            monitors = await monitor_list(client)
            late = {m: monitors[m]["polls"] for m, n in targets.items() if monitors[m]["polls"] < n}
            if not late:
                return monitors
            await trio.sleep(1)
    raise AssertionError(f"{len(late)} monitors short of their polls after {seconds} s: {late}")


def clients_of_nodes(
    log: list[dict[str, Any]], index: SliceIndex, owner_of_slice: dict[Slice, str], since: float
) -> dict[str, str] | None:
    """node -> the simulator client id its marketplace client uses, from the feed requests
    since `since`, while leases did not move: each client read only one node's monitors.
    None when the window does not show that (a lease moved in it, or a node polled nothing)."""
    seen: dict[str, set[str]] = defaultdict(set)
    for entry in log:
        if entry["t"] >= since and entry["path"] == FEED_PATH:
            found = index.of_request(entry)
            assert found is not None
            seen[entry["client"]].add(owner_of_slice[found])
    if not all(len(nodes) == 1 for nodes in seen.values()):
        return None
    clients = {next(iter(nodes)): client for client, nodes in seen.items()}
    return clients if sorted(clients) == sorted(NODES) else None


async def stable_clients_of_nodes(
    store: Store, log: list[dict[str, Any]], index: SliceIndex, slice_of: dict[str, Slice]
) -> dict[str, str]:
    """node -> client id, read in a window of feed requests in which the leases held still.
    On a busy machine leases still move a while after the nodes start (a node's share is
    recomputed at each heartbeat), and a window across a move, or one in which a lease had
    no owner, says nothing: another window is taken, up to a deadline."""
    with trio.fail_after(180):
        while True:
            before, since = await owners(store, list(slice_of)), trio.current_time()
            await trio.sleep(3)  # the window of feed requests observed
            after = await owners(store, list(slice_of))
            if before == after and None not in after.values():
                owner_of = {slice_of[m]: str(owner) for m, owner in after.items()}
                clients = clients_of_nodes(log, index, owner_of, since)
                if clients is not None:
                    return clients


async def owners(store: Store, monitor_ids: list[str]) -> dict[str, str | None]:
    leases = await store.cluster.leases("monitor", monitor_ids)
    return {monitor_id: owner for monitor_id, (owner, _) in leases.items()}


async def sample_adoption(
    store: Store, dead: list[str], since: float, adopted: dict[str, float]
) -> None:
    """Note, for each of the dead node's monitors, how long after `since` a survivor was first
    seen holding its lease (a sample every 0.1 s: the figures are at most that much late)."""
    while len(adopted) < len(dead):
        held = await owners(store, dead)
        now = trio.current_time()
        for monitor_id, owner in held.items():
            if monitor_id not in adopted and owner not in (None, VICTIM):
                adopted[monitor_id] = now - since
        await trio.sleep(0.1)


async def assert_operators_see_the_cluster(
    clients: dict[str, ServiceClient], survivors: list[str], monitor_ids: list[str]
) -> None:
    """From each survivor: `/api/ops/nodes` lists the survivors alive (the killed node, if
    still listed, not alive) holding every monitor between them, and `/api/ops/actors` every
    monitor once, on a survivor, with its lease expiry. Nodes count their work at heartbeats,
    so the counts may take a heartbeat to settle after adoption."""
    for name in survivors:
        client = clients[name]
        with trio.fail_after(4 * LEASE_SECONDS):
            while True:
                view = (await client.get("/api/ops/nodes")).json()
                alive = {n["node_id"]: n for n in view["nodes"] if n["alive"]}
                if sum(n["monitors"] for n in alive.values()) == len(monitor_ids):
                    break
                await trio.sleep(LEASE_SECONDS / 3)
        assert view["cluster"] is True and view["lease_seconds"] == LEASE_SECONDS
        assert sorted(alive) == sorted(survivors), view["nodes"]
        assert [n["node_id"] for n in view["nodes"] if n["this_node"]] == [name]
        assert all(n["role"] == "serve" and n["version"] for n in alive.values())
        actors = (await client.get("/api/ops/actors")).json()
        assert actors["partial"] is False
        monitors = [a for a in actors["actors"] if a["kind"] == "monitor"]
        assert sorted(a["monitor_id"] for a in monitors) == sorted(monitor_ids)
        assert {a["node_id"] for a in monitors} == set(survivors)
        assert all(a["lease_expires_at"] is not None for a in monitors)


async def _background(task_status: trio.TaskStatus[trio.Nursery]) -> None:
    """A nursery for the prober and the adoption sampler, cancelled before the final kills."""
    async with trio.open_nursery() as nursery:
        task_status.started(nursery)
        await trio.sleep_forever()


async def test_three_nodes_one_killed_mid_poll(
    postgres_url: str, tmp_path: Path, nursery: trio.Nursery
) -> None:
    began = trio.current_time()
    wall_offset = time.time() - began  # wall clock minus trio clock, this process
    world = World(SimulatorConfig(seed=9, speed=SPEED, n_listings=3000))
    # Steady for six simulated days (144 s here), longer than the test can run.
    slices = slice_market(world, MONITORS, steady_for=6 * 86_400.0)
    index = SliceIndex(slices, world)
    app = RecordingSimulator(world)
    origin: str = await nursery.start(serve_app, app)
    outbox = tmp_path / "outbox"
    operator = unique_email()  # the test's one account, an operator so it can read /api/ops
    quotas = {"trial": {"active_monitors": MONITORS, "min_poll_seconds": 1}}
    env = {
        **os.environ,
        "NICHESCOPE_SECRET_KEY": secrets.token_urlsafe(32),  # one session, valid on every node
        "NICHESCOPE_LEASE_SECONDS": str(LEASE_SECONDS),
        "NICHESCOPE_MARKET_ORIGINS": origin,
        "NICHESCOPE_MARKET_RATE": "0",
        "NICHESCOPE_PAGE_CAP": "1",
        "NICHESCOPE_MIN_POLL_SECONDS": "1",
        "NICHESCOPE_COOKIE_SECURE": "0",
        "NICHESCOPE_OUTBOX_DIR": str(outbox),
        "NICHESCOPE_PLAN_QUOTAS": json.dumps(quotas),
        "NICHESCOPE_OPERATORS": operator,
    }
    settings = Settings(database_url=postgres_url, outbox_dir=outbox, cookie_secure=False)
    nodes: dict[str, Node] = {}
    for name in NODES:
        process = ServiceProcess(
            free_port(), postgres_url, {**env, "NICHESCOPE_NODE_ID": name}, tmp_path / f"{name}.log"
        )
        nodes[name] = Node(name, process, RunningService(url=process.url, settings=settings))
    server_errors: list[str] = []
    died: dict[str, float] = {}  # client id -> when its node was killed
    adopted: dict[str, float] = {}
    try:
        async with trio_asyncio.open_loop(), open_store(postgres_url) as store:
            async with trio.open_nursery() as starting:
                for node in nodes.values():
                    starting.start_soon(node.process.start)
            started_at = trio.current_time()

            async with watched_client(nodes[READER].running, server_errors) as reader:
                await signed_in(reader, operator)
                cookies = reader.cookies
                clients = {
                    name: watched_client(node.running, server_errors, cookies)
                    for name, node in nodes.items()
                }
                ids: list[str] = [""] * MONITORS

                async def create(offset: int) -> None:
                    client = clients[NODES[offset % len(NODES)]]
                    for i in range(offset, MONITORS, CREATORS):
                        body = {"url": slices[i].url(origin), "interval_seconds": INTERVAL}
                        started = await client.post("/api/monitoring/start", json=body)
                        assert started.status_code == 202, started.text
                        ids[i] = str(started.json()["id"])

                async with trio.open_nursery() as creating:
                    for offset in range(CREATORS):
                        creating.start_soon(create, offset)
                created_at = trio.current_time()
                slice_of = dict(zip(ids, slices, strict=True))
                prober = Prober(clients, ids)
                background = await nursery.start(_background)
                background.start_soon(prober.run)

                await polls_reach(reader, {m: 2 for m in ids}, 60)
                warm_at = trio.current_time()
                client_of = await stable_clients_of_nodes(store, app.log, index, slice_of)

                # The kill: node-b's next feed answer is held back, then node-b is SIGKILLed.
                with trio.fail_after(60):
                    held = await app.hold(client_of[VICTIM])
                prober.dead.add(VICTIM)
                await nodes[VICTIM].process.kill()
                killed_at = trio.current_time()
                died[client_of[VICTIM]] = killed_at
                dead = [m for m, owner in (await owners(store, ids)).items() if owner == VICTIM]
                background.start_soon(sample_adoption, store, dead, killed_at, adopted)
                after_kill = await monitor_list(reader)
                held_slice = index.of_request(held)

                # On until every monitor polled again (node-b's by a survivor) and enough.
                targets = {m: max(SETTLE_POLLS, after_kill[m]["polls"] + 1) for m in ids}
                await polls_reach(reader, targets, 2 * LEASE_SECONDS + 2 * INTERVAL + 30)
                final = await monitor_list(reader)
                with trio.fail_after(60):
                    while len(adopted) < len(dead):
                        await trio.sleep(0.1)
                survivors = [name for name in NODES if name != VICTIM]
                await assert_operators_see_the_cluster(clients, survivors, ids)
                prober.dead.update(NODES)
                background.cancel_scope.cancel()
                for name, node in nodes.items():
                    if name != VICTIM:
                        await node.process.kill()
                        died[client_of[name]] = trio.current_time()
                ended_at = trio.current_time()
                for client in clients.values():
                    await client.aclose()

            log = list(app.log)
            truth_doc = world.truth(app.sim_now())
            wall_ref, sim_ref = time.time(), app.sim_now()
            recorded = {m: await load(store, m) for m in ids}
            checked_at = trio.current_time()
    finally:
        for node in nodes.values():
            await node.process.close()

    def to_sim(wall: float) -> float:
        return sim_ref + (wall - wall_ref) * SPEED

    def to_trio(stamp: str) -> float:
        return datetime.fromisoformat(stamp).timestamp() - wall_offset

    # Figures first, so that a failing run still shows them.
    logs = {name: _read(node.process.log_path) for name, node in nodes.items()}
    errors = {name: logged_errors(text) for name, text in logs.items()}
    fenced = sum(text.count("could not renew its leases") for text in logs.values())
    lost = sum(text.count("lost; stopping") for text in logs.values())
    closes = sum(cancelled for _, cancelled in errors.values())
    spans = poll_spans(log, index, died)
    survivors = {client_of[n] for n in NODES if n != VICTIM}
    lags: dict[str, float] = {}  # first survivor poll after the kill - max(adopted, due)
    overdue: set[str] = set()  # fell due before a survivor held them
    for monitor_id in dead:
        due = to_trio(after_kill[monitor_id]["next_poll_at"])
        first = min(
            (
                s.start
                for s in spans[slice_of[monitor_id]]
                if s.client in survivors and s.start > killed_at
            ),
            default=math.inf,
        )
        lags[monitor_id] = first - max(killed_at + adopted.get(monitor_id, math.inf), due)
        if due < killed_at + adopted.get(monitor_id, math.inf):
            overdue.add(monitor_id)
    # The baseline for those lags: how late the survivors ran on the monitors they kept, over
    # the same minutes (the longest gap between two of such a monitor's polls after the kill,
    # past its interval). A busy machine delays every poll of a node, adopted or not.
    kept = {slice_of[m] for m in ids if m not in dead}
    survivors_late = max(
        (
            b.start - a.start - INTERVAL
            for found in (spans[s] for s in kept)
            for a, b in itertools.pairwise(
                sorted((x for x in found if x.start > killed_at), key=lambda x: x.start)
            )
        ),
        default=0.0,
    )
    adoption = max(adopted.values(), default=math.inf)
    clashes = [pair for found in spans.values() for pair in overlaps(found)]
    moved = sum(len({s.client for s in found}) > 1 for found in spans.values())
    moves = Counter(
        e.to_state for rec in recorded.values() for e in rec.events if e.kind == "state"
    )
    news = sum(e.kind == "new" for rec in recorded.values() for e in rec.events)
    feeds = [e for e in log if e["path"] == FEED_PATH and created_at <= e["t"] <= ended_at]
    print(
        f"\ncluster failover: {len(dead)} monitors of {VICTIM} adopted within {adoption:.2f} s",
        f"(median {statistics.median(adopted.values()):.2f} s; limit {2 * LEASE_SECONDS:.0f} s);",
        f"first survivor poll at most {max(lags.values()):.2f} s after adopted and due",
        f"({len(overdue)} overdue at adoption: at most",
        f"{max((lags[m] for m in overdue), default=0.0):.2f} s; the others at most",
        f"{max((v for m, v in lags.items() if m not in overdue), default=0.0):.2f} s;",
        f"the survivors' own monitors up to {survivors_late:.2f} s late);",
        f"{len(clashes)} overlapping polls ({moved} monitors polled by more than one node);",
        f"{len(feeds) / (ended_at - created_at):.1f} feed requests/s,",
        f"{sum(m['polls'] for m in final.values())} polls recorded;",
        f"{news} new listings, state changes {dict(moves)};",
        f"{prober.probes} API probes, slowest {prober.slowest:.2f} s;",
        f"nodes fenced {fenced} times, {lost} leases lost, {closes} cancelled closes;",
        f"phases: start {started_at - began:.1f} s, create {created_at - started_at:.1f} s,",
        f"warm {warm_at - created_at:.1f} s, after kill {ended_at - killed_at:.1f} s,",
        f"checks {checked_at - ended_at:.1f} s",
    )

    # The API answered from every live node throughout, and no node logged an error.
    assert not server_errors, server_errors
    assert not prober.failures, prober.failures
    for name, (found, _) in errors.items():
        assert not found, f"{name}: {found[:3]}"
    assert all(m["status"] == "active" for m in final.values())

    # Adoption: leased by a survivor within two lease periods of the kill, then polled by it
    # once adopted and due. The held poll was one of the dead node's.
    assert len(dead) >= MONITORS // (2 * len(NODES)), len(dead)
    assert held_slice is not None and held_slice in {slice_of[m] for m in dead}
    assert adoption <= 2 * LEASE_SECONDS, sorted(adopted.values())[-10:]
    assert max(lags.values()) <= RESUME_MARGIN + max(0.0, survivors_late), (
        sorted(lags.values())[-10:],
        survivors_late,
    )

    # Never two nodes at once.
    assert not clashes, clashes[:5]

    # Nothing lost, nothing duplicated, true to the market: every monitor, against the truth
    # of its own slice.
    truth = {int(item["id"]): item for item in truth_doc["listings"]}
    for monitor_id, rec in recorded.items():
        assert_whole_and_unique(rec)
        own = slice_of[monitor_id]
        mine = {i: t for i, t in truth.items() if own.holds(t["category_id"], Decimal(t["price"]))}
        assert_true_to_the_market(rec, mine, own.category_id, to_sim)
    assert moves["sold"] >= 20 and news >= 50, (moves, news)  # the market did move
