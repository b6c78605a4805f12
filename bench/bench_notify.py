"""Notification benchmark (issue 18): how long after a poll commits an alert reaches a webhook.

Run: `python -m bench.bench_notify [--quick | --smoke] [--postgres] [--arrivals N]` (full:
about 5 minutes; `--quick`: about 2; `--smoke`: 20 monitors every 4 s for seconds, not
judged). `--postgres` runs on a fresh database created (and dropped) with psql on
127.0.0.1:5432, as bench_engine's listings section does; the node then runs in cluster mode,
as `open_node` runs any node on PostgreSQL.

One node, wired as `nichescope serve` wires it (`api.process.node.open_node`: store, engine, the
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

The rule is added once the bootstrap round and a window of re-polls are done (20 s with
`--quick`, 60 s without), so the same run measures schedule lag and the poll's transaction
without and with alerts, under the same load from whatever else the machine runs; the
alerting window lasts 60 s (`--quick`) or 180 s, and alerts written before its end are given
up to 20 s to arrive. `write_poll_alerts` (the outbox write in the poll's transaction) is
timed too.

Latency, per notification, is measured from the poll's commit: the benchmark wraps
`store.monitors.record_poll` and stamps the wall clock when it returns (the transaction has
committed; the stamp can only be late, by the hand-back from asyncio to trio), keyed by
(monitor, the poll's `finished_at`), which is the alert's `created_at`. The same latency from
`created_at` (stamped before the poll's transaction even starts) is printed too: the truth
lies between the two. The latency is an absolute figure judged against its target (p99 < 2 s):
no ratio is printed, since nothing measured here delivers alerts another way (a user who
re-reads the page instead learns of a listing whenever they happen to).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import trio
import trio_asyncio
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from api.process.node import open_node
from api.settings import Settings
from bench._common import (
    load_note,
    process_cpu_seconds,
    spawn_announcing,
    stop,
)
from bench._notify_report import Meter, Run, micros, report
from engine import MarketplaceSettings, SecretBox, check_destination, open_marketplace
from engine.notifications import new_signing_secret
from scrapers.simulator import NICHE_PAIRS
from store import (
    NewChannel,
    NewMonitor,
    NewRule,
    NewUser,
    PollOutcome,
    PollRecord,
    Store,
    open_store,
)
from store.monitors import polls as polls_module
from store.monitors.models import Monitor, Poll
from store.notify.models import Notification, NotificationDelivery


@dataclass(frozen=True)
class Size:
    """A run's size: `monitors` polling every `interval` s, their first polls spread over one
    interval from `lead` s ahead; windows of re-polls without the rule, then with it."""

    monitors: int
    interval: int
    lead: float
    before: float
    alerting: float


FULL = Size(1000, 30, 8.0, 60.0, 180.0)
QUICK = replace(FULL, before=20.0, alerting=60.0)
SMOKE = Size(20, 4, 1.0, 2.0, 4.0)  # seconds: that it runs, not what it measures
DRAIN_SECONDS = 20.0  # after the run, how long alerts written before the cut-off may take
PG_ADMIN = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-q", "-c"]
T = TypeVar("T")


def _peer(
    args: list[str], env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """`python -m bench._notify_peers ARGS` and the origin it prints once it listens."""
    return spawn_announcing(["bench._notify_peers", *args], env)


# -- setup --------------------------------------------------------------------------------------


async def _seed(
    store: Store, size: Size, origin: str, receiver: str, secret: str, key: str
) -> tuple[dict[str, datetime], str, NewRule]:
    """The workspace, its 1,000 monitors (first polls spread) and one webhook channel made as
    the API makes it (checked, sealed, masked); returns the first polls' times, the
    workspace, and the rule to add later: every new listing to that channel."""
    user = await store.create_user(NewUser(
        user_id="usr_bench", workspace_id="wsp_bench", email="bench@example.test",
        name="bench", password_hash=None,
    ))  # fmt: skip
    workspace = user.workspace_id
    for i in range(size.monitors):
        category, brand = NICHE_PAIRS[i % len(NICHE_PAIRS)]  # the market's 60 niches
        await store.monitors.create(NewMonitor(
            monitor_id=f"mon_{i:05d}", workspace_id=workspace,
            url=f"{origin}/catalog?catalog[]={category}&brand_ids[]={brand}",
            label=None, interval_seconds=size.interval, page_cap=1,
        ))  # fmt: skip
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
    first = {
        f"mon_{i:05d}": now + timedelta(seconds=size.lead + i * size.interval / size.monitors)
        for i in range(size.monitors)
    }

    def spread(db: Session) -> None:
        for monitor_id, at in first.items():
            moved = update(Monitor).where(Monitor.id == monitor_id).values(next_poll_at=at)
            db.execute(moved)

    await store.unit(spread)
    return first, workspace, rule


def _stamp_commits(store: Store, commits: dict[tuple[str, int], float]) -> None:
    """Note when each poll's transaction has committed (see the module doc)."""
    record_poll = store.monitors.record_poll

    async def stamped(monitor_id: str, outcome: PollOutcome, **kw: Any) -> PollRecord:
        record = await record_poll(monitor_id, outcome, **kw)
        commits[(monitor_id, micros(outcome.finished_at))] = time.time()
        return record

    store.monitors.record_poll = stamped  # type: ignore[method-assign]


@contextmanager
def _timing_outbox_writes(spent: list[tuple[float, float, int]]) -> Iterator[None]:
    """Note (when, seconds, rows) of each `write_poll_alerts` that `record_poll` runs inside
    the poll's transaction (its module global, swapped for the run and put back)."""
    write = polls_module.write_poll_alerts

    # Called in the unit's worker thread, inside the transaction: synchronous, as it is.
    def timed(*args: Any, **kw: Any) -> int:
        began = time.perf_counter()
        rows = write(*args, **kw)
        spent.append((time.time(), time.perf_counter() - began, rows))
        return rows

    polls_module.write_poll_alerts = timed
    try:
        yield
    finally:
        polls_module.write_poll_alerts = write


# -- the run ------------------------------------------------------------------------------------


async def _run(url: str, backend: str, size: Size, arrivals: float, sim: str, receiver: str,
               secret: str) -> Run:  # fmt: skip
    key = uuid.uuid4().hex * 2
    async with open_store(url, run_migrations=True) as store:
        first, workspace, rule = await _seed(store, size, sim, receiver, secret, key)
    with tempfile.TemporaryDirectory() as outbox:
        settings = Settings(
            database_url=url, secret_key=key, outbox_dir=Path(outbox),
            outbound_allow=(receiver,), node_id="bench-node",
        )  # fmt: skip
        # Politeness lifted for the local simulator, as in bench_engine.
        market_settings = MarketplaceSettings(extra_origins=(sim,), rate=0, concurrency=32)
        commits: dict[tuple[str, int], float] = {}
        writes: list[tuple[float, float, int]] = []
        # Lead, the bootstrap round, then a window of re-polls without the rule (the baseline
        # of schedule lag and poll transactions, in the same run), then the rule.
        before = size.lead + size.interval + size.before
        duration = before + size.alerting
        with _timing_outbox_writes(writes):
            async with (
                open_marketplace(market_settings) as market,
                open_node(settings, role="worker", market=market) as (store, engine),
            ):
                _stamp_commits(store, commits)
                started, meter = store.clock(), Meter()
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
        backend=backend, monitors=size.monitors, interval=size.interval, duration=duration,
        rule_at=rule_at, arrivals=arrivals, commits=commits,
        cutoff=cutoff, drained_in=drained_in, usage_before=usage_before, usage_with=usage_with,
        outbox_writes=writes,
        delivered_by_dispatcher=delivered, failed_sends=failed, started=started, first=first,
    )  # fmt: skip


async def _drain(store: Store, cutoff: datetime) -> float:
    """Seconds until nothing written before `cutoff` is pending (polls go on meanwhile), at
    most DRAIN_SECONDS."""
    began = trio.current_time()

    def pending(db: Session) -> int:
        count = select(func.count()).where(
            Notification.status == "pending", Notification.created_at <= cutoff
        )
        return int(db.scalar(count) or 0)

    # Polled: the outbox lives in the database, and nothing here is told when it empties.
    while trio.current_time() - began < DRAIN_SECONDS and await store.unit(pending) > 0:  # noqa: ASYNC110
        await trio.sleep(0.25)
    return trio.current_time() - began


async def _read(url: str, work: Callable[[Session], T]) -> T:
    async with open_store(url, run_migrations=False) as store:
        return await store.unit(work)


async def _rows(url: str, cutoff: datetime) -> tuple[list[Any], list[Any], list[Any]]:
    def work(db: Session) -> tuple[list[Any], list[Any], list[Any]]:
        notes = db.execute(
            select(Notification.id, Notification.monitor_id, Notification.created_at,
                   Notification.status, Notification.attempts)
            .where(Notification.created_at <= cutoff)
        )  # fmt: skip
        polls = db.execute(
            select(Poll.monitor_id, Poll.started_at, Poll.finished_at, Poll.error, Monitor.url)
            .join(Monitor, Monitor.id == Poll.monitor_id)
            .order_by(Poll.monitor_id, Poll.started_at)
        )  # fmt: skip
        deliveries = db.execute(
            select(NotificationDelivery.ok, NotificationDelivery.notification_ids)
        )
        return list(notes), list(polls), list(deliveries)

    return await _read(url, work)


# -- orchestration ------------------------------------------------------------------------------


def _measure(backend: str, url: str, size: Size, arrivals: float) -> bool:
    secret = new_signing_secret()
    simulator, sim = _peer(["simulator", str(arrivals)])
    try:
        receiver, origin = _peer(["receiver"], {"BENCH_WEBHOOK_SECRET": secret})
        try:
            run = trio.run(_arun, url, backend, size, arrivals, sim, origin, secret)
            seen = httpx.get(f"{origin}/__bench__/results", timeout=30).json()
            peers = (f"simulator CPU {process_cpu_seconds(simulator.pid):.0f} s, receiver "
                     f"{process_cpu_seconds(receiver.pid):.0f} s")  # fmt: skip
        finally:
            stop(receiver)
    finally:
        stop(simulator)
    rows = trio.run(_arows, url, run.cutoff)
    return report(run, rows, seen, peers)


async def _arun(url: str, backend: str, size: Size, arrivals: float, sim: str, receiver: str,
                secret: str) -> Run:  # fmt: skip
    async with trio_asyncio.open_loop():
        return await _run(url, backend, size, arrivals, sim, receiver, secret)


async def _arows(url: str, cutoff: datetime) -> tuple[list[Any], list[Any], list[Any]]:
    async with trio_asyncio.open_loop():
        return await _rows(url, cutoff)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.bench_notify")
    parser.add_argument("--quick", action="store_true", help="a shorter run (about 2 minutes)")
    parser.add_argument("--smoke", action="store_true", help="20 monitors for seconds, not judged")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL instead of SQLite")
    parser.add_argument("--arrivals", type=float, default=4.0,
                        help="new listings per second across the marketplace")  # fmt: skip
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    size = SMOKE if args.smoke else QUICK if args.quick else FULL
    print(load_note())
    with tempfile.TemporaryDirectory() as folder:
        if not args.postgres:
            url = f"sqlite+aiosqlite:///{folder}/bench.db"
            ok = _measure("sqlite", url, size, args.arrivals)
            return 0 if ok or args.smoke else 1
        name = f"nichescope_bench_{uuid.uuid4().hex[:12]}"
        subprocess.run([*PG_ADMIN, f"CREATE DATABASE {name}"], check=True, timeout=60)
        try:
            url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
            ok = _measure("postgres", url, size, args.arrivals)
        finally:
            subprocess.run([*PG_ADMIN, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"],
                           check=False, timeout=60)  # fmt: skip
    return 0 if ok or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
