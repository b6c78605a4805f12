"""Notification benchmark (issue 18): how long after a poll commits an alert reaches a webhook.

Run: `python -m bench.bench_notify [--quick] [--postgres] [--arrivals N]` (full: about
5 minutes; `--quick`: about 2).

One node, wired as `nichescope serve` wires it (`api.node.open_node`: store, engine, the
notification dispatcher with its courier and guarded outbound client), runs 1,000 monitors
polling every 30 s (one catalogue page each, 60 distinct searches: 6 categories x 10 brands,
as in `bench_engine`) against the marketplace simulator in another process, where new
listings appear steadily (`--arrivals` per second across the marketplace, 4 by default).
One workspace-level rule sends every new listing of every monitor to one webhook channel
pointed at a Standard Webhooks receiver in a third process on loopback, which verifies each
signature (`standardwebhooks`) and notes each arrival on the machine's wall clock. The
receiver's origin is the node's `outbound_allow`, exactly.

Why all 1,000 monitors: every poll then pays the outbox's cost in its transaction (rules,
channels, niche figures, the insert), which is what could slow polling; and since the outbox
keeps one alert per (rule, channel, kind, listing), a listing seen by the ~17 monitors
sharing its search is alerted once, so deliveries track the arrival rate, not 17 times it.

Latency, per notification, is measured from the poll's commit: the benchmark wraps
`store.monitors.record_poll` and stamps the wall clock when it returns (the transaction has
committed; the stamp can only be late, by the hand-back from asyncio to trio), keyed by
(monitor, the poll's `finished_at`), which is the alert's `created_at`. The same latency from
`created_at` (stamped before the poll's transaction even starts) is printed too: the truth
lies between the two. The baseline is the poll interval: without push, a user re-reading the
page every 30 s learns of a listing 15 s after it was recorded on average, 30 s at worst.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import trio
import trio_asyncio
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from api.node import open_node
from api.settings import Settings
from bench._common import (
    ROOT,
    cpu_seconds,
    load_note,
    machine_cpu_seconds,
    percentile,
    process_cpu_seconds,
    stop,
    verdict,
)
from engine import MarketplaceSettings, SecretBox, check_destination, open_marketplace
from engine.notifications import new_signing_secret
from store import NewChannel, NewRule, PollOutcome, PollRecord, Store, open_store
from store import _polls as polls_module
from store._monitor_models import Monitor, Poll
from store._notify_models import Notification, NotificationDelivery

N, INTERVAL, LEAD = 1000, 30, 8.0  # first polls spread over one interval, from LEAD s ahead
CATEGORIES = (1904, 1206, 257, 1231, 4881, 1812)
BRANDS = (53, 14, 12, 88, 304, 73, 1565, 2319, 162, 255)
DRAIN_SECONDS = 20.0  # after the run, how long alerts written before the cut-off may take
TARGET_P99 = 2.0
PG_ADMIN = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-q", "-c"]
T = TypeVar("T")


def _micros(at: datetime) -> int:
    return round(at.timestamp() * 1_000_000)


def _peer(
    args: list[str], env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """`python -m bench._notify_peers ARGS` and the origin it prints once it listens."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench._notify_peers", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
    )
    stdout: IO[bytes] | None = process.stdout
    assert stdout is not None
    line = stdout.readline().decode().strip()  # "" if it died: its traceback is on stderr
    if not line.startswith("http://"):
        stop(process)
        raise RuntimeError(f"bench._notify_peers {args[0]} did not start")
    return process, line


@dataclass(frozen=True)
class Usage:
    """Over a window: the node's CPU share of one core, and how busy the whole machine was
    (every core, every process: others' tests included)."""

    node: float
    machine: float


class _Meter:
    def __init__(self) -> None:
        self.cpu, self.wall, self.busy = cpu_seconds(), time.monotonic(), machine_cpu_seconds()

    def usage(self) -> tuple[Usage, _Meter]:
        now = _Meter()
        node = (now.cpu - self.cpu) / max(1e-9, now.wall - self.wall)
        machine = (now.busy[0] - self.busy[0]) / max(1e-9, now.busy[1] - self.busy[1])
        return Usage(node, machine), now


@dataclass
class Run:
    backend: str
    duration: float
    rule_at: datetime
    arrivals: float
    commits: dict[tuple[str, int], float]
    cutoff: datetime
    drained_in: float
    usage_before: Usage  # lead, bootstrap round and re-polls without the rule
    usage_with: Usage  # from the rule to the cut-off
    outbox_writes: list[tuple[float, float, int]]  # (when, seconds, rows) per poll
    delivered_by_dispatcher: int
    failed_sends: int
    started: datetime
    first: dict[str, datetime]


# -- setup --------------------------------------------------------------------------------------


async def _seed(
    store: Store, origin: str, receiver: str, secret: str, key: str
) -> tuple[dict[str, datetime], str, NewRule]:
    """The workspace, its 1,000 monitors (first polls spread) and one webhook channel made as
    the API makes it (checked, sealed, masked); returns the first polls' times, the
    workspace, and the rule to add later: every new listing to that channel."""
    user = await store.create_user(
        user_id="usr_bench", workspace_id="wsp_bench", email="bench@example.test",
        name="bench", password_hash=None,
    )  # fmt: skip
    workspace = user.workspace_id
    for i in range(N):
        category, brand = CATEGORIES[i % len(CATEGORIES)], BRANDS[(i // 6) % len(BRANDS)]
        await store.monitors.create(
            monitor_id=f"mon_{i:05d}", workspace_id=workspace,
            url=f"{origin}/catalog?catalog[]={category}&brand_ids[]={brand}",
            label=None, interval_seconds=INTERVAL, page_cap=1,
        )  # fmt: skip
    destination = await check_destination(
        "webhook", {"url": f"{receiver}/hooks/nichescope"}, allow=(receiver,),
        signing_secret=secret,
    )  # fmt: skip
    channel = await store.notify.add_channel(
        NewChannel(
            workspace_id=workspace, kind="webhook", name="bench receiver",
            hint=destination.hint, secret_box=SecretBox(key).seal(destination.secrets),
        )
    )  # fmt: skip
    rule = NewRule(name="Every new listing", kinds=("new_listing",), channel_ids=(channel.id,))
    now = store.clock()
    first = {f"mon_{i:05d}": now + timedelta(seconds=LEAD + i * INTERVAL / N) for i in range(N)}

    async def spread(db: AsyncSession) -> None:
        for monitor_id, at in first.items():
            moved = update(Monitor).where(Monitor.id == monitor_id).values(next_poll_at=at)
            await db.execute(moved)

    await store.unit(spread)
    return first, workspace, rule


def _stamp_commits(store: Store, commits: dict[tuple[str, int], float]) -> None:
    """Note when each poll's transaction has committed (see the module doc)."""
    record_poll = store.monitors.record_poll

    async def stamped(monitor_id: str, outcome: PollOutcome, **kw: Any) -> PollRecord:
        record = await record_poll(monitor_id, outcome, **kw)
        commits[(monitor_id, _micros(outcome.finished_at))] = time.time()
        return record

    store.monitors.record_poll = stamped  # type: ignore[method-assign]


@contextmanager
def _timing_outbox_writes(spent: list[tuple[float, float, int]]) -> Iterator[None]:
    """Note (when, seconds, rows) of each `write_poll_alerts` that `record_poll` runs inside
    the poll's transaction (its module global, swapped for the run and put back)."""
    write = polls_module.write_poll_alerts

    async def timed(*args: Any, **kw: Any) -> int:
        began = time.perf_counter()
        rows = await write(*args, **kw)
        spent.append((time.time(), time.perf_counter() - began, rows))
        return rows

    polls_module.write_poll_alerts = timed
    try:
        yield
    finally:
        polls_module.write_poll_alerts = write


# -- the run ------------------------------------------------------------------------------------


async def _run(url: str, backend: str, quick: bool, arrivals: float, sim: str, receiver: str,
               secret: str) -> Run:  # fmt: skip
    key = uuid.uuid4().hex * 2
    async with open_store(url, run_migrations=True) as store:
        first, workspace, rule = await _seed(store, sim, receiver, secret, key)
    with tempfile.TemporaryDirectory() as outbox:
        settings = replace(
            Settings(), database_url=url, secret_key=key, outbox_dir=Path(outbox),
            outbound_allow=(receiver,), node_id="bench-node",
        )  # fmt: skip
        # Politeness lifted for the local simulator, as in bench_engine.
        market_settings = MarketplaceSettings(extra_origins=(sim,), rate=0, concurrency=32)
        commits: dict[tuple[str, int], float] = {}
        writes: list[tuple[float, float, int]] = []
        # Lead, the bootstrap round, then a window of re-polls without the rule (the baseline
        # of schedule lag and poll transactions, in the same run), then the rule.
        before = LEAD + INTERVAL + (20.0 if quick else 60.0)
        duration = before + (60.0 if quick else 180.0)
        with _timing_outbox_writes(writes):
            async with (
                open_marketplace(market_settings) as market,
                open_node(settings, role="worker", market=market) as (store, engine),
            ):
                _stamp_commits(store, commits)
                started, meter = store.clock(), _Meter()
                await trio.sleep(before)
                await store.notify.add_rule(workspace, rule)
                rule_at = store.clock()
                usage_before, meter = meter.usage()
                await trio.sleep(duration - before)
                cutoff = store.clock()
                usage_with, _ = meter.usage()
                drained_in = await _drain(store, cutoff)
                dispatcher = engine.dispatcher
                delivered = dispatcher.delivered if dispatcher else -1
                failed = dispatcher.failed_sends if dispatcher else -1
    return Run(
        backend=backend, duration=duration, rule_at=rule_at, arrivals=arrivals, commits=commits,
        cutoff=cutoff, drained_in=drained_in, usage_before=usage_before, usage_with=usage_with,
        outbox_writes=writes,
        delivered_by_dispatcher=delivered, failed_sends=failed, started=started, first=first,
    )  # fmt: skip


async def _drain(store: Store, cutoff: datetime) -> float:
    """Seconds until nothing written before `cutoff` is pending (polls go on meanwhile), at
    most DRAIN_SECONDS."""
    began = trio.current_time()

    async def pending(db: AsyncSession) -> int:
        count = select(func.count()).where(
            Notification.status == "pending", Notification.created_at <= cutoff
        )
        return int(await db.scalar(count) or 0)

    # Polled: the outbox lives in the database, and nothing here is told when it empties.
    while trio.current_time() - began < DRAIN_SECONDS and await store.unit(pending) > 0:  # noqa: ASYNC110
        await trio.sleep(0.25)
    return trio.current_time() - began


async def _read(url: str, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    async with open_store(url, run_migrations=False) as store:
        return await store.unit(work)


async def _rows(url: str, cutoff: datetime) -> tuple[list[Any], list[Any], list[Any]]:
    async def work(db: AsyncSession) -> tuple[list[Any], list[Any], list[Any]]:
        notes = await db.execute(
            select(Notification.id, Notification.monitor_id, Notification.created_at,
                   Notification.status, Notification.attempts)
            .where(Notification.created_at <= cutoff)
        )  # fmt: skip
        polls = await db.execute(
            select(Poll.monitor_id, Poll.started_at, Poll.finished_at, Poll.error)
            .order_by(Poll.monitor_id, Poll.started_at)
        )  # fmt: skip
        deliveries = await db.execute(
            select(NotificationDelivery.ok, NotificationDelivery.notification_ids)
        )
        return list(notes), list(polls), list(deliveries)

    return await _read(url, work)


# -- figures ------------------------------------------------------------------------------------


@dataclass
class Window:
    """Re-polls (after a successful poll) started in one window of the run."""

    lags: list[float]  # schedule lag, as bench_engine measures it
    commits: list[float]  # the poll's finished_at -> its transaction committed
    polls: int = 0
    errors: int = 0

    def line(self) -> str:
        lag_max = max(self.lags, default=float("nan"))
        return (
            f"schedule lag p50 {_ms(percentile(self.lags, 50))}, p99 "
            f"{_ms(percentile(self.lags, 99))}, max {_ms(lag_max)} over {len(self.lags)} "
            f"re-polls ({self.errors} of {self.polls} polls failed); poll transaction "
            f"(finished_at -> commit) p50 {_ms(percentile(self.commits, 50))}, p99 "
            f"{_ms(percentile(self.commits, 99))}"
        )


def _windows(run: Run, polls: list[Any]) -> tuple[Window, Window]:
    """Before and with the rule. A poll's lag is its start minus the `next_poll_at` the
    previous poll promised (its finish + the interval); a re-poll after a failed one is
    backed off on purpose and not counted."""
    before, with_rule = Window([], []), Window([], [])
    promised, previous = dict(run.first), dict[str, bool]()
    for monitor_id, started, finished, error in polls:
        if started > run.cutoff:
            continue
        window = before if started < run.rule_at else with_rule
        window.polls += 1
        window.errors += error is not None
        if previous.get(monitor_id):
            window.lags.append((started - promised[monitor_id]).total_seconds())
            committed = run.commits.get((monitor_id, _micros(finished)))
            if committed is not None:
                window.commits.append(committed - finished.timestamp())
        previous[monitor_id] = error is None
        promised[monitor_id] = finished + timedelta(seconds=INTERVAL)
    return before, with_rule


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def _report(run: Run, rows: tuple[list[Any], list[Any], list[Any]], seen: dict[str, Any],
            peers_cpu: str) -> bool:  # fmt: skip
    """Print the figures; False on a hard failure (duplicates, or nothing delivered), which
    fails the run. A missed latency target is printed MISS and does not."""
    notes, polls, deliveries = rows
    arrivals: dict[str, float] = seen["arrivals"]
    items: dict[str, Any] = seen["items"]
    from_commit, from_created, commit_gap, unstamped = [], [], [], 0
    for note_id, monitor_id, created_at, _, _ in notes:
        arrived = arrivals.get(note_id)
        committed = run.commits.get((monitor_id, _micros(created_at)))
        if committed is not None:
            commit_gap.append(committed - created_at.timestamp())
        if arrived is None:
            continue
        from_created.append(arrived - created_at.timestamp())
        if committed is None:
            unstamped += 1
        else:
            from_commit.append(arrived - committed)
    ours = {n[0] for n in notes}
    undelivered = [n for n in notes if n[0] not in arrivals]
    retried = sum(1 for n in notes if n[4] > 1)
    redelivered = seen["rejected"].get("replayed", 0)
    forged = sum(v for k, v in seen["rejected"].items() if k != "replayed")
    listed = [items[i] for i in arrivals]
    same_listing_twice = len(listed) - len(set(listed))
    duplicates = redelivered + same_listing_twice
    before, with_rule = _windows(run, polls)
    p = {q: percentile(from_commit, q) for q in (50, 90, 99)}
    worst = max(from_commit, default=float("nan"))
    lag_p99 = percentile(with_rule.lags, 99)
    batches = [len(ids) for good, ids in deliveries if good]
    db = "SQLite" if run.backend == "sqlite" else "PostgreSQL"
    print(f"1,000 monitors x 30 s on {db} (one node, dispatcher wired by open_node), simulator "
          f"({run.arrivals:g} new listings/s) and webhook receiver in separate processes; "
          f"{run.duration:.0f} s run (the rule added after "
          f"{(run.rule_at - run.started).total_seconds():.0f} s) + drain")  # fmt: skip
    print(f"  notifications: {len(notes)} written by polls up to the cut-off, "
          f"{len(ours & arrivals.keys())} delivered to the receiver (signatures verified), "
          f"{len(undelivered)} undelivered after {run.drained_in:.1f} s of drain; "
          f"duplicates {duplicates} (ids redelivered {redelivered}, same listing twice "
          f"{same_listing_twice}) {verdict(duplicates == 0, 'FAIL')}; refused by the receiver "
          f"(signature/timestamp) {forged}; retried {retried}")  # fmt: skip
    print(f"  latency poll commit -> receiver: p50 {_ms(p[50])}, p90 {_ms(p[90])}, "
          f"p99 {_ms(p[99])}, max {_ms(worst)} over {len(from_commit)} notifications "
          f"(target p99 < {TARGET_P99:.0f} s) {verdict(bool(from_commit) and p[99] < TARGET_P99)}"
          + (f"; {unstamped} without a commit stamp" if unstamped else ""))  # fmt: skip
    print(f"  from the outbox row's created_at (the poll's finished_at, before its transaction): "
          f"p50 {_ms(percentile(from_created, 50))}, p99 {_ms(percentile(from_created, 99))}, "
          f"max {_ms(max(from_created, default=float('nan')))}; created_at -> commit p50 "
          f"{_ms(percentile(commit_gap, 50))}, p99 {_ms(percentile(commit_gap, 99))}")  # fmt: skip
    print(f"  baseline, the 30 s poll interval (a user re-reading the page waits 15 s on "
          f"average, 30 s at worst): p50 is {p[50] / 15:.1%} of 15 s (x{15 / p[50]:.0f} sooner), "
          f"p99 {p[99] / 30:.1%} of 30 s (x{30 / p[99]:.0f} sooner)")  # fmt: skip
    mean_batch = sum(batches) / max(1, len(batches))
    print(f"  dispatcher: {len(batches)} successful sends logged ({mean_batch:.1f} alerts per "
          f"claimed batch on average), {run.failed_sends} failed sends; it counted "
          f"{run.delivered_by_dispatcher} delivered")  # fmt: skip
    print(f"  engine with the rule: {with_rule.line()} (target p99 < 2 s) "
          f"{verdict(lag_p99 < 2.0)}")  # fmt: skip
    print(f"  engine before the rule, same run (baseline): {before.line()}")
    start, end = run.rule_at.timestamp(), run.cutoff.timestamp()
    writes = [(spent, rows) for at, spent, rows in run.outbox_writes if start <= at <= end]
    spent = [w[0] for w in writes]
    print(f"  outbox write in the poll's transaction (write_poll_alerts) with the rule: p50 "
          f"{_ms(percentile(spent, 50))}, p99 {_ms(percentile(spent, 99))} over {len(writes)} "
          f"polls, {sum(spent) / max(1e-9, end - start):.0%} of the node's wall time; "
          f"{sum(w[1] for w in writes)} rows written by them")  # fmt: skip
    one, five, _ = os.getloadavg()
    ub, uw = run.usage_before, run.usage_with
    print(f"  node CPU {uw.node:.0%} of one core with the rule, {ub.node:.0%} before; machine "
          f"busy {uw.machine:.0%} with, {ub.machine:.0%} before ({os.cpu_count()} cores, all "
          f"processes); {peers_cpu}; load average {one:.2f} / {five:.2f} at the end")  # fmt: skip
    return duplicates == 0 and bool(from_commit)


# -- orchestration ------------------------------------------------------------------------------


def _measure(backend: str, url: str, quick: bool, arrivals: float) -> bool:
    secret = new_signing_secret()
    simulator, sim = _peer(["simulator", str(arrivals)])
    try:
        receiver, origin = _peer(["receiver"], {"BENCH_WEBHOOK_SECRET": secret})
        try:
            run = trio.run(_arun, url, backend, quick, arrivals, sim, origin, secret)
            seen = httpx.get(f"{origin}/__bench__/results", timeout=30).json()
            peers = (f"simulator CPU {process_cpu_seconds(simulator.pid):.0f} s, receiver "
                     f"{process_cpu_seconds(receiver.pid):.0f} s")  # fmt: skip
        finally:
            stop(receiver)
    finally:
        stop(simulator)
    rows = trio.run(_arows, url, run.cutoff)
    return _report(run, rows, seen, peers)


async def _arun(url: str, backend: str, quick: bool, arrivals: float, sim: str, receiver: str,
                secret: str) -> Run:  # fmt: skip
    async with trio_asyncio.open_loop():
        return await _run(url, backend, quick, arrivals, sim, receiver, secret)


async def _arows(url: str, cutoff: datetime) -> tuple[list[Any], list[Any], list[Any]]:
    async with trio_asyncio.open_loop():
        return await _rows(url, cutoff)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.bench_notify")
    parser.add_argument("--quick", action="store_true", help="a shorter run (about 2 minutes)")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL instead of SQLite")
    parser.add_argument("--arrivals", type=float, default=4.0,
                        help="new listings per second across the marketplace")  # fmt: skip
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    print(load_note())
    with tempfile.TemporaryDirectory() as folder:
        if not args.postgres:
            ok = _measure("sqlite", f"sqlite+aiosqlite:///{folder}/bench.db", args.quick,
                          args.arrivals)  # fmt: skip
            return 0 if ok else 1
        name = f"nichescope_bench_{uuid.uuid4().hex[:12]}"
        subprocess.run([*PG_ADMIN, f"CREATE DATABASE {name}"], check=True, timeout=60)
        try:
            url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
            ok = _measure("postgres", url, args.quick, args.arrivals)
        finally:
            subprocess.run([*PG_ADMIN, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"],
                           check=False, timeout=60)  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
