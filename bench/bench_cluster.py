"""Cluster mode (issue 9): polls/s with 1, 2 and 3 `nichescope worker` nodes sharing one
PostgreSQL database on this machine, and how long a killed node's monitors take to be adopted.

Run: `python -m bench.bench_cluster [--quick | --smoke] [--lease SECONDS] [--logs DIR]` (full:
about 10 minutes; `--quick`: about 6; `--smoke`: 60 monitors, 1 and 2 nodes, one sweep, about a
minute, figures not meaningful). PostgreSQL: the local server
`postgresql+asyncpg://postgres@127.0.0.1:5432`, or the server NICHESCOPE_BENCH_PG_URL names (a
URL without a database). The bench creates the database `nichescope_bench_cluster` there
(dropping a leftover one), migrates it with `nichescope migrate` and drops it at the end. The
marketplace simulator runs in its own process; nodes are real `nichescope worker` processes
with NICHESCOPE_MARKET_RATE=0 (no politeness pause: the simulator is local). `--logs` keeps
the nodes' logs; notable lines (leases lost, self-fencing, failed heartbeats) are counted
after each window either way.

1. Scaling: 600 monitors (catalogue pages of the simulator, page cap 1) each due every second,
   far more than the nodes can poll, so polls/s is their throughput. The node count goes
   through three sweeps, up and down in turn (1 2 3, 3 2 1, 1 2 3; a sweep's last window is
   also the next one's first): a node is started, or the newest one stopped with SIGTERM (it
   gives its leases back), lease `--lease` (default 15 s as in the service); after each change
   the bench waits until the leases are spread (every monitor leased, each node within one of
   its share; that wait is printed), lets the actors settle, then counts the successful polls
   finished in a fixed window from the `polls` table. Each ratio against 1 node is the median
   of the three sweeps' ratios, with their range. Over each window: CPU of each node, of
   the simulator, of PostgreSQL (the server's own processes and the bench database's
   backends), of this bench, of anything else and of the whole machine; the CPU the nodes,
   PostgreSQL and the simulator spent per successful poll (what more nodes cost per poll,
   which other work on the machine hardly moves); each node's longest gap between two
   heartbeats (past the lease a node stops its own work: it could not renew); the peak
   number of connections to the bench database.
2. Failover (lease 5 s, to keep the wait short): the nodes are stopped with SIGTERM (they give
   their leases back; timed), most monitors are paused and the rest polled every 2 s, a load
   two nodes carry easily, so that a poll after adoption waits for nothing but the adoption.
   Three fresh nodes spread it; the one holding most is killed with SIGKILL. Timed from the
   kill: until every monitor it held is leased by a survivor, and until each has a new
   successful poll. Target (issue 9): adoption within two lease periods.

Sanity over the whole run (must be 0, else FAIL and exit status 1): two successful polls of
one monitor overlapping in time, i.e. one monitor polled by two nodes at once. A node that
exits on its own is also a FAIL (its last log lines are printed).

Reading the figures: the nodes, PostgreSQL, the simulator and this bench share the machine's
cores (2 here). One node alone keeps a good part of them busy (itself, and PostgreSQL and the
simulator working for it); once the machine is busy, another node only splits the same CPU,
so the 2- and 3-node ratios are bounded by the cores, not by the design. The CPU line under
each window says how busy the machine was and who used it: on a shared machine, "anything
else" shows how much of it the bench did not have.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trio
import trio_asyncio
from sqlalchemy import insert, text

from bench._cluster_bench import (
    Cluster,
    CpuSample,
    LogWatch,
    Node,
    NodeCrashed,
    check_alive,
    kill,
    psql,
    server_url,
)
from bench._common import load_note, spawn, start_simulator, stop, verdict
from bench._fair import ratios, spread
from scrapers.simulator import NICHE_PAIRS
from store import NewUser, Store, open_store, utc_now
from store.monitors.models import Monitor

DATABASE = "nichescope_bench_cluster"
MONITORS = 600
INTERVAL = 1  # seconds: every monitor always due, the nodes saturated
FAILOVER_LEASE = 5.0
FAILOVER_INTERVAL = 2
SPREAD_TIMEOUT = 90.0


# -- seed and queries ---------------------------------------------------------------------------


async def _seed(store: Store, origin: str, monitors: int) -> None:
    """A workspace and `monitors` active, bootstrapped monitors due at once, written directly."""
    user = await store.create_user(NewUser(
        user_id="usr_bench", workspace_id="wsp_bench", email="bench@example.test",
        name="bench", password_hash=None,
    ))  # fmt: skip
    now = store.clock()
    rows = [dict(
        id=f"mon_{i:05d}", workspace_id=user.workspace_id,
        url="{}/catalog?catalog[]={}&brand_ids[]={}".format(origin, *NICHE_PAIRS[i % 60]),
        status="active", interval_seconds=INTERVAL, page_cap=1, created_at=now,
        bootstrapped_at=now, next_poll_at=now, consecutive_errors=0, total_errors=0, polls=0)
        for i in range(monitors)]  # fmt: skip

    def load(db: Any) -> None:
        db.execute(insert(Monitor), rows)

    await store.unit(load)


async def _sql(store: Store, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    def run(db: Any) -> list[tuple[Any, ...]]:
        result = db.execute(text(sql), params)
        return [tuple(row) for row in result] if result.returns_rows else []

    return await store.unit(run)


async def _owners(store: Store) -> Counter[str | None]:
    """Active monitors per live lease owner (None: unleased or lapsed)."""
    rows = await _sql(
        store,
        "SELECT CASE WHEN lease_expires_at > now() THEN lease_owner END, count(*) "
        "FROM monitors WHERE status = 'active' GROUP BY 1",
    )
    return Counter({owner: int(count) for owner, count in rows})


async def _wait_spread(store: Store, nodes: Sequence[Node], wanted: int) -> tuple[float, str]:
    """Seconds until every active monitor is leased and each node holds at least its share
    less one, and how the leases stand then (after SPREAD_TIMEOUT: marked NOT SPREAD)."""
    started = time.monotonic()
    names = {n.name for n in nodes}
    floor = wanted // len(nodes) - 1
    while True:
        owners = await _owners(store)
        spread = not owners.get(None) and set(owners) == names
        spread = spread and all(owners[name] >= floor for name in names)
        waited = time.monotonic() - started
        if spread or waited > SPREAD_TIMEOUT:
            held = ", ".join(f"{name} {owners[name]}" for name in sorted(names))
            free = f", unleased {owners[None]}" if owners.get(None) else ""
            return waited, f"{held}{free}{'' if spread else ' NOT SPREAD'}"
        check_alive(nodes)
        await trio.sleep(0.25)


async def _tokens(store: Store) -> dict[str, tuple[str | None, int]]:
    rows = await _sql(store, "SELECT id, lease_owner, lease_token FROM monitors")
    return {row[0]: (row[1], int(row[2])) for row in rows}


async def _watch_nodes(
    store: Store, task_status: trio.TaskStatus[dict[str, float]] = trio.TASK_STATUS_IGNORED
) -> None:
    """Fill the dict handed to the starter, until cancelled: each node's longest time
    without a heartbeat, and under "connections" the peak of the bench database's."""
    seen: dict[str, float] = {}
    last: dict[str, datetime] = {}
    task_status.started(seen)
    while True:
        now = utc_now()
        for name, at in await _sql(store, "SELECT id, heartbeat_at FROM nodes"):
            if name in last and at != last[name]:
                seen[name] = max(seen.get(name, 0.0), (at - last[name]).total_seconds())
            last[name] = at
            seen[name] = max(seen.get(name, 0.0), (now - at).total_seconds())
        count = "SELECT count(*) FROM pg_stat_activity WHERE datname = :db"
        connections = (await _sql(store, count, db=DATABASE))[0][0]
        seen["connections"] = max(seen.get("connections", 0), connections)
        await trio.sleep(0.25)


# -- 1. scaling ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    rate: float  # successful polls per second
    cost: tuple[float, float]  # CPU ms per successful poll: nodes; nodes, PostgreSQL, simulator
    lines: str


async def _window(
    store: Store, cluster: Cluster, nodes: Sequence[Node], seconds: float, lease: float
) -> Window:
    """Successful polls finished within `seconds` from now, their CPU cost, and the lines
    saying how they spread and what the machine did meanwhile."""
    server = server_url()
    tokens0, t0 = await _tokens(store), utc_now()
    cpu0 = CpuSample.take(nodes, cluster.simulator, server, DATABASE)
    async with trio.open_nursery() as nursery:
        seen = await nursery.start(_watch_nodes, store)
        await trio.sleep(seconds)
        nursery.cancel_scope.cancel()
    t1, cpu1 = utc_now(), CpuSample.take(nodes, cluster.simulator, server, DATABASE)
    check_alive(nodes)
    tokens1 = await _tokens(store)
    await trio.sleep(1.0)  # polls finished just before t1 are committed just after
    rows = await _sql(
        store,
        "SELECT m.lease_owner, count(*) FILTER (WHERE p.error IS NULL), "
        "count(*) FILTER (WHERE p.error IS NOT NULL), "
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY p.duration_ms) "
        "FROM polls p JOIN monitors m ON m.id = p.monitor_id "
        "WHERE p.finished_at >= :t0 AND p.finished_at < :t1 GROUP BY 1 ORDER BY 1",
        t0=t0, t1=t1,
    )  # fmt: skip
    span = (t1 - t0).total_seconds()
    ok, failed = sum(int(r[1]) for r in rows), sum(int(r[2]) for r in rows)
    per_node = ", ".join(f"{r[0]} {int(r[1]) / span:.1f}" for r in rows)
    durations = ", ".join(f"{float(r[3] or 0):.0f}" for r in rows)
    moved = sum(1 for k, v in tokens1.items() if tokens0.get(k) != v)
    gaps = ", ".join(f"{n.name} {seen.get(n.name, float('nan')):.1f} s" for n in nodes)
    cost = tuple(1000 * cpu / max(1, ok) for cpu in cpu1.spent(cpu0))
    lines = (
        f"{ok / span:.1f} polls/s over {span:.0f} s ({ok} ok, {failed} failed); per node (by "
        f"lease owner) {per_node}; poll duration p50 {durations} ms; leases moved during the "
        f"window {moved}",
        cpu1.since(cpu0) + f"; CPU per successful poll: nodes {cost[0]:.1f} ms, with "
        f"PostgreSQL and the simulator {cost[1]:.1f} ms",
        f"heartbeat gap max {gaps} (one every {lease / 3:.1f} s; past the {lease:.0f} s lease "
        f"a node stops its own work); connections to the bench database peak "
        f"{seen.get('connections', 0):.0f}",
    )
    return Window(ok / span, (cost[0], cost[1]), "\n    ".join(lines))


@dataclass(frozen=True)
class Size:
    monitors: int  # seeded, all due every INTERVAL
    window: float  # seconds a window counts polls
    counts: tuple[int, ...]  # node counts compared, the first the baseline
    sweeps: int  # passes over the counts, up and down in turn


FULL = Size(MONITORS, 30.0, (1, 2, 3), 3)
QUICK = Size(MONITORS, 10.0, (1, 2, 3), 3)
SMOKE = Size(60, 2.0, (1, 2), 1)


async def _resize(
    store: Store, cluster: Cluster, nodes: list[Node], count: int, lease: float, size: Size
) -> None:
    """Start or gracefully stop nodes (the newest first) until `count` run, then wait until
    the leases are spread over them and the actors settle."""
    while len(nodes) < count:
        nodes.append(cluster.start(f"bench-node-{len(cluster.nodes) + 1}", lease))
    while len(nodes) > count:
        stop(nodes.pop().process)  # SIGTERM: it gives its leases back
    waited, held = await _wait_spread(store, nodes, size.monitors)
    print(f"{count} node{'s' * (count > 1)} (lease {lease:.0f} s): leases spread "
          f"{waited:.1f} s after the change: {held}", flush=True)  # fmt: skip
    await trio.sleep(3.0)  # the new actors' first steps, the old ones' last


async def _scaling(
    store: Store, cluster: Cluster, lease: float, size: Size, logs: LogWatch
) -> tuple[list[Node], float]:
    """Polls/s with each node count, in sweeps up and down (1 2 3, 3 2 1, 1 2 3: a sweep's
    last window is the next one's first), so that the machine's drift weighs on every count
    alike; each ratio is the median of the per-sweep ratios to 1 node. Returns the running
    nodes and the median polls/s with 2 nodes (or the most measured)."""
    nodes: list[Node] = []
    sweeps: list[dict[int, Window]] = []
    last: tuple[int, Window] | None = None
    for turn in range(size.sweeps):
        order = size.counts if turn % 2 == 0 else size.counts[::-1]
        measured: dict[int, Window] = {}
        for count in order:
            if last is not None and last[0] == count:
                measured[count] = last[1]
                continue
            await _resize(store, cluster, nodes, count, lease, size)
            window = await _window(store, cluster, nodes, size.window, lease)
            print(f"  sweep {turn + 1}: {window.lines}\n    {logs.since_last()}", flush=True)
            measured[count], last = window, (count, window)
        sweeps.append(measured)
    _print_scaling(sweeps, size)
    two = 2 if 2 in size.counts else size.counts[-1]
    return nodes, statistics.median(s[two].rate for s in sweeps)


def _print_scaling(sweeps: list[dict[int, Window]], size: Size) -> None:
    base, counts = size.counts[0], size.counts
    rates = " / ".join(spread([s[c].rate for s in sweeps]) for c in counts)
    gains = " / ".join(
        spread(ratios([s[c].rate for s in sweeps], [s[base].rate for s in sweeps]), 2)
        for c in counts[1:]
    )
    print(f"  polls/s with {' / '.join(map(str, counts))} nodes, median (range) of "
          f"{len(sweeps)} sweeps: {rates}; per sweep against {base} node: {gains}x; the nodes, "
          f"PostgreSQL, the simulator and this bench share {os.cpu_count()} cores, so the "
          f"ratio is bounded by the cores (and by whatever else runs), not by the design",
          flush=True)  # fmt: skip
    costs = " / ".join(spread([s[c].cost[1] for s in sweeps]) for c in counts)
    dearer = " / ".join(
        spread(ratios([s[c].cost[1] for s in sweeps], [s[base].cost[1] for s in sweeps]), 2)
        for c in counts[1:]
    )
    print(f"  CPU per successful poll (nodes, PostgreSQL, simulator) with "
          f"{' / '.join(map(str, counts))} nodes: {costs} ms; per sweep against {base} node: "
          f"{dearer}x: what running more nodes costs per poll, whatever else the machine "
          f"does", flush=True)  # fmt: skip


# -- 2. failover --------------------------------------------------------------------------------


async def _graceful_stop(store: Store, nodes: Sequence[Node]) -> str:
    """SIGTERM every node; when their leases were all given back, and when they exited."""
    started = time.monotonic()
    for node in nodes:
        node.process.send_signal(signal.SIGTERM)
    released = None
    while released is None or any(n.process.poll() is None for n in nodes):
        if released is None:
            rows = await _sql(store, "SELECT count(*) FROM monitors WHERE lease_owner IS NOT NULL")
            released = time.monotonic() - started if rows[0][0] == 0 else None
        if time.monotonic() - started > 60:
            for node in nodes:
                kill(node)
            return "NOT STOPPED within 60 s (killed)"
        await trio.sleep(0.1)
    codes = [n.process.returncode for n in nodes]
    status = f" WITH exit statuses {codes}" if any(codes) else ""
    return (f"leases given back {released:.1f} s after SIGTERM, processes exited after "
            f"{time.monotonic() - started:.1f} s{status}")  # fmt: skip


async def _failover(
    store: Store, cluster: Cluster, rate_two: float, size: Size, logs: LogWatch
) -> None:
    # Half what two saturated nodes did: the survivors keep up with room to spare.
    active = max(12, min(size.monitors, int(rate_two * FAILOVER_INTERVAL * 0.5)))
    await _sql(
        store,
        "UPDATE monitors SET status = CASE WHEN id < :last THEN 'active' ELSE 'paused' END, "
        "interval_seconds = :interval, next_poll_at = now()",
        last=f"mon_{active:05d}", interval=FAILOVER_INTERVAL,
    )  # fmt: skip
    nodes = [cluster.start(f"bench-failover-{i}", FAILOVER_LEASE) for i in (1, 2, 3)]
    try:
        waited, held = await _wait_spread(store, nodes, active)
        print(f"failover (lease {FAILOVER_LEASE:.0f} s): {active} active monitors every "
              f"{FAILOVER_INTERVAL} s ({active / FAILOVER_INTERVAL:.0f} polls/s wanted), the "
              f"other {size.monitors - active} paused; 3 fresh nodes spread in {waited:.1f} s: "
              f"{held}", flush=True)  # fmt: skip
        await trio.sleep(FAILOVER_LEASE)  # steady: every actor has polled
        owners = await _owners(store)
        victim = max(nodes, key=lambda n: owners[n.name])
        query = "SELECT id, lease_expires_at FROM monitors WHERE lease_owner = :node"
        rows = await _sql(store, query + " AND status = 'active'", node=victim.name)
        orphans = sorted(row[0] for row in rows)
        killed = utc_now()
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait(10)
        lapse = (max(row[1] for row in rows) - killed).total_seconds()
        leased, polled = await _watch_adoption(store, victim.name, orphans, killed)
        check_alive([n for n in nodes if n is not victim])
        heirs = await _sql(
            store,
            "SELECT lease_owner, count(*) FROM monitors WHERE id = ANY(:ids) GROUP BY 1 ORDER BY 1",
            ids=orphans,
        )
    finally:
        for node in nodes:
            if node.process.poll() is None:
                stop(node.process)
    target = 2 * FAILOVER_LEASE
    print(
        f"  killed {victim.name} (SIGKILL) holding {len(orphans)} monitors; their leases "
        f"would lapse {lapse:.1f} s after the kill (renewed every {FAILOVER_LEASE / 3:.1f} s)"
    )
    taken = ", ".join(f"{owner} {count}" for owner, count in heirs)
    print(
        f"  all leased by survivors after "
        f"{'NOT within the wait' if leased is None else f'{leased:.1f} s'} ({taken})"
    )
    if polled is None:
        print(f"  a new successful poll of each: NOT within {6 * FAILOVER_LEASE:.0f} s, target "
              f"< {target:.0f} s (2 lease periods) MISS")  # fmt: skip
    else:
        last, median = polled
        print(f"  a new successful poll of each after {last:.1f} s (median {median:.1f} s) = "
              f"{last / FAILOVER_LEASE:.2f} lease periods, target < 2 "
              f"{verdict(last < target)}")  # fmt: skip
    print(f"  {logs.since_last()}", flush=True)


async def _watch_adoption(
    store: Store, victim: str, orphans: list[str], killed: datetime
) -> tuple[float | None, tuple[float, float] | None]:
    """Seconds from the kill until the orphans are all leased by survivors (seen every 0.2 s),
    and until each had a successful poll started after the kill (the last one's finish and
    the median's); None for what did not happen within six leases."""
    leased: float | None = None
    deadline = time.monotonic() + 6 * FAILOVER_LEASE
    while time.monotonic() < deadline:
        if leased is None:
            rows = await _sql(
                store,
                "SELECT count(*) FROM monitors WHERE id = ANY(:ids) AND lease_owner <> :victim "
                "AND lease_expires_at > now()",
                ids=orphans, victim=victim,
            )  # fmt: skip
            leased = (utc_now() - killed).total_seconds() if rows[0][0] == len(orphans) else None
        rows = await _sql(
            store,
            "SELECT min(finished_at) FROM polls WHERE monitor_id = ANY(:ids) "
            "AND error IS NULL AND started_at > :killed GROUP BY monitor_id",
            ids=orphans, killed=killed,
        )  # fmt: skip
        if len(rows) == len(orphans):
            firsts = sorted((row[0] - killed).total_seconds() for row in rows)
            return leased, (firsts[-1], firsts[len(firsts) // 2])
        await trio.sleep(0.2)
    return leased, None


# -- orchestration ------------------------------------------------------------------------------


async def _overlaps(store: Store) -> tuple[int, int]:
    """(Successful polls started before the previous successful poll of the same monitor had
    finished, successful polls in all.)"""
    rows = await _sql(
        store,
        "SELECT count(*) FILTER (WHERE previous_end > started_at), count(*) FROM ("
        "SELECT started_at, lag(finished_at) OVER (PARTITION BY monitor_id ORDER BY started_at) "
        "AS previous_end FROM polls WHERE error IS NULL) AS p",
    )
    return int(rows[0][0]), int(rows[0][1])


async def _bench(cluster: Cluster, lease: float, size: Size) -> int:
    logs = LogWatch(cluster.folder)
    crashed = False
    try:
        async with trio_asyncio.open_loop(), open_store(cluster.url) as store:
            await _seed(store, cluster.origin, size.monitors)
            try:
                nodes, rate_two = await _scaling(store, cluster, lease, size, logs)
                print(f"graceful stop of the {len(nodes)} saturated nodes: "
                      f"{await _graceful_stop(store, nodes)}", flush=True)  # fmt: skip
                await _failover(store, cluster, rate_two, size, logs)
            except NodeCrashed as err:
                crashed = True
                print(f"FAIL: {err}", flush=True)
            overlapping, total = await _overlaps(store)
            print(f"sanity: successful polls of one monitor overlapping in time (two nodes at "
                  f"once): {overlapping} of {total} "
                  f"{verdict(overlapping == 0, 'FAIL')}")  # fmt: skip
    finally:
        for node in cluster.nodes:
            kill(node)
    if logs.errors:
        print("first errors the nodes logged:\n" + "\n".join(logs.errors))
    one, five, _ = os.getloadavg()
    print(f"load average at the end {one:.2f} / {five:.2f}")
    return 1 if overlapping or crashed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.bench_cluster", description=__doc__.split("\n")[0])
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="10 s windows instead of 30 s")
    sizes.add_argument(
        "--smoke", action="store_true", help="60 monitors, 1 and 2 nodes, 2 s windows, one sweep"
    )
    parser.add_argument("--lease", type=float, default=15.0, help="the scaling nodes' lease")
    parser.add_argument("--logs", type=Path, help="keep the nodes' logs in this folder")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    print(load_note(), flush=True)
    server = server_url()
    url = server.set(database=DATABASE).render_as_string(hide_password=False)
    psql(server, f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")  # a leftover one
    psql(server, f"CREATE DATABASE {DATABASE}")
    simulator: subprocess.Popen[bytes] | None = None
    try:
        if spawn(["-m", "api.process.cli", "migrate", "--database-url", url]).wait(120) != 0:
            raise RuntimeError("nichescope migrate failed")
        simulator, origin = start_simulator()
        with tempfile.TemporaryDirectory(prefix="nichescope-bench-cluster-") as scratch:
            folder = args.logs or Path(scratch)
            folder.mkdir(parents=True, exist_ok=True)
            cluster = Cluster(url, origin, simulator.pid, folder)
            size = SMOKE if args.smoke else QUICK if args.quick else FULL
            return trio.run(_bench, cluster, args.lease, size)
    finally:
        if simulator is not None:
            stop(simulator)
        psql(server, f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")


if __name__ == "__main__":
    sys.exit(main())
