"""Engine benchmarks (issue 4, "Scale"): monitors at scale, idle actors, listings and export.

Run: `python -m bench.bench_engine [--quick | --smoke]` (full: about 12 minutes; `--quick`:
about 6; `--smoke`: 40 monitors, 200 idle actors and 3,200 listings for seconds, not judged).
Each section runs in its own child process so that peak RSS and CPU belong to it alone:

1. `monitors`: 1,000 monitors on one engine (SQLite store) polling the simulator (run in a
   separate process) every 30 s; schedule lag from the poll records (poll start minus the
   `next_poll_at` the previous poll promised), polls/s, CPU time and peak RSS.
2. `idle`: 10,000 paused monitor actors (stub marketplace, they never poll); RSS growth per
   actor against the same process just before spawning them.
3. `listings-sqlite` / `listings-postgres`: a monitor holding 1,000,000 listings, served by
   `nichescope serve` in a subprocess; listings-page latency under 50 concurrent clients
   (httpx in another subprocess) and the streamed export's peak RSS growth and throughput.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trio
import trio_asyncio
from sqlalchemy import insert, select, update

from bench._common import (
    ROOT,
    cpu_seconds,
    load_note,
    peak_rss_kib,
    percentile,
    rss_kib,
    start_simulator,
    stop,
    verdict,
)
from engine import MarketplaceSettings, OriginReport, next_poll_tick, open_engine, open_marketplace
from engine.market import Feed, PastedSession, SessionNotTaken
from scrapers.simulator import NICHE_PAIRS
from store import ConfirmedState, NewMonitor, NewUser, Store, open_store
from store.monitors.models import Monitor, Poll

SECTIONS = ("monitors", "idle", "listings-sqlite", "listings-postgres")


async def _workspace(store: Store) -> str:
    user = await store.create_user(NewUser(
        user_id="usr_bench", workspace_id="wsp_bench", email="bench@example.test",
        name="bench", password_hash=None,
    ))  # fmt: skip
    return user.workspace_id


# -- 1. 1,000 monitors against the simulator -------------------------------------------------


async def _monitors(size: str) -> None:
    n, interval = (40, 5) if size == "smoke" else (1000, 30)
    duration = {"smoke": 8.0, "quick": 100.0}.get(size, 160.0)
    # First polls are spread over one interval starting this far ahead.
    lead = 1.0 if size == "smoke" else 8.0
    simulator, origin = start_simulator()
    try:
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite+aiosqlite:///{folder}/bench.db"
            async with trio_asyncio.open_loop(), open_store(url, run_migrations=True) as store:
                await _run_monitors(store, origin, n, interval, duration, lead)
    finally:
        stop(simulator)


async def _run_monitors(
    store: Store, origin: str, n: int, interval: int, duration: float, lead: float
) -> None:
    workspace = await _workspace(store)
    now = store.clock()
    first: dict[str, datetime] = {}
    for i in range(n):
        category, brand = NICHE_PAIRS[i % len(NICHE_PAIRS)]  # the market's 60 niches
        monitor = await store.monitors.create(NewMonitor(
            monitor_id=f"mon_{i:05d}", workspace_id=workspace,
            url=f"{origin}/catalog?catalog[]={category}&brand_ids[]={brand}",
            label=None, interval_seconds=interval, page_cap=1,
        ))  # fmt: skip
        first[monitor.id] = now + timedelta(seconds=lead + i * interval / n)

    def spread(db: object) -> None:
        for monitor_id, at in first.items():
            db.execute(  # type: ignore[attr-defined]
                update(Monitor).where(Monitor.id == monitor_id).values(next_poll_at=at)
            )

    await store.unit(spread)  # type: ignore[arg-type]
    gc.collect()
    rss_before = rss_kib()
    # Politeness lifted for the local simulator: no rate limit, and more than the polite two
    # requests at a time to one origin (every monitor here polls the same origin).
    settings = MarketplaceSettings(extra_origins=(origin,), rate=0, concurrency=32)
    async with open_marketplace(settings) as market:
        cpu0, wall0, started = cpu_seconds(), time.monotonic(), store.clock()
        async with open_engine(store, market) as engine:
            await trio.sleep(duration)
            cpu1, wall1, ended = cpu_seconds(), time.monotonic(), store.clock()
            stopping = time.monotonic()
        stop_seconds = time.monotonic() - stopping
        del engine

    def polls(db: object) -> list[tuple[str, datetime, datetime, str | None, int, int, str]]:
        rows = db.execute(  # type: ignore[attr-defined]
            select(
                Poll.monitor_id, Poll.started_at, Poll.finished_at, Poll.error, Poll.confirmed,
                Poll.duration_ms, Monitor.url,
            ).join(Monitor, Monitor.id == Poll.monitor_id)
            .order_by(Poll.monitor_id, Poll.started_at)
        )  # fmt: skip
        return [tuple(r) for r in rows]

    rows = await store.unit(polls)  # type: ignore[arg-type]
    lags, boot_lags, errors, promised = [], [], 0, dict(first)
    previous: dict[str, bool] = {}
    for monitor_id, poll_started, poll_finished, error, _, _, url in rows:
        lag = (poll_started - promised[monitor_id]).total_seconds()
        if monitor_id not in previous:
            boot_lags.append(lag)
        elif previous[monitor_id]:  # after an error the next try is backed off on purpose
            lags.append(lag)
        previous[monitor_id] = error is None
        errors += error is not None
        # The search's next grid tick, as the poll stored it (`engine.next_poll_tick`).
        promised[monitor_id] = next_poll_tick(poll_finished, interval, url, monitor_id)
    window_start = started + timedelta(seconds=lead + interval)
    steady = [r for r in rows if r[1] >= window_start]
    window = (ended - window_start).total_seconds()
    p50, p99 = percentile(lags, 50), percentile(lags, 99)
    cpu, wall = cpu1 - cpu0, wall1 - wall0
    lag_max = max(lags, default=float("nan"))
    boot_p99 = percentile(boot_lags, 99)
    print(f"{n:,} monitors x {interval} s on SQLite, simulator in a separate process, "
          f"{duration:.0f} s run: {len(rows)} polls ({errors} failed), "
          f"{len(lags)} scheduled re-polls measured")  # fmt: skip
    print(f"  schedule lag p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max "
          f"{lag_max:.2f} s (target p99 < 2 s) {verdict(p99 < 2.0)}; "
          f"first (bootstrap) polls p99 {boot_p99:.2f} s")  # fmt: skip
    print(f"  polls/s sustained {len(steady) / window:.1f} over the last {window:.0f} s "
          f"(ideal {n / interval:.1f}); CPU {cpu:.1f} s in {wall:.0f} s = "
          f"{cpu / wall:.0%} of one core; RSS before engine {rss_before / 1024:.0f} MiB, "
          f"peak RSS {peak_rss_kib() / 1024:.0f} MiB; "
          f"graceful stop of {n:,} actors {stop_seconds:.1f} s")  # fmt: skip
    recorded = [r for r in rows if r[3] is None]
    confirmations = sum(r[4] for r in recorded) / max(1, len(recorded))
    durations = [r[5] / 1000 for r in recorded]
    print(f"  per poll: {confirmations:.1f} drop-out confirmations (detail requests) on "
          f"average; poll duration p50 {percentile(durations, 50):.2f} s, "
          f"p99 {percentile(durations, 99):.2f} s")  # fmt: skip


# -- 2. 10,000 idle actors --------------------------------------------------------------------


class IdleMarket:
    """Never asked: the actors are paused."""

    async def check_url(self, url: str) -> str:
        return url

    async def fetch_feed(self, url: str, page_cap: int) -> Feed:
        raise AssertionError("an idle actor polled")

    async def fetch_state(self, url: str, item_id: int) -> ConfirmedState:
        raise AssertionError("an idle actor polled")

    def failure_kind(self, error: Exception) -> str | None:
        return None

    def note_suspicious(self, url: str, kind: str) -> None:
        raise AssertionError("an idle actor polled")

    def origin_reports(self) -> list[OriginReport]:
        return []

    async def take_operator_session(
        self, site: str, cookie_text: str, user_agent: str | None
    ) -> PastedSession:
        raise SessionNotTaken("this node has no marketplace client")


async def _idle(size: str) -> None:
    n = int(os.environ.get("BENCH_IDLE_N", "200" if size == "smoke" else "10000"))
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{folder}/bench.db"
        async with trio_asyncio.open_loop(), open_store(url, run_migrations=True) as store:
            workspace = await _workspace(store)
            now = store.clock()
            rows = [
                dict(id=f"mon_{i:05d}", workspace_id=workspace, url="https://x.invalid/catalog",
                     status="paused", interval_seconds=3600, page_cap=1, created_at=now,
                     bootstrapped_at=now, next_poll_at=None, consecutive_errors=0,
                     total_errors=0, polls=0)
                for i in range(n)
            ]  # fmt: skip

            def load(db: object) -> None:
                db.execute(insert(Monitor), rows)  # type: ignore[attr-defined]

            await store.unit(load)  # type: ignore[arg-type]
            records = await store.monitors.in_workspace(workspace)
            rows.clear()
            async with open_engine(store, IdleMarket()) as engine:  # type: ignore[arg-type]
                await engine.resumed.wait()
                await _settle()
                base = rss_kib()
                spawned = time.monotonic()
                for start in range(0, n, 500):
                    batch = [await engine.spawn_monitor(r) for r in records[start : start + 500]]
                    while any(h.board.snapshot().state == "starting" for h in batch):  # noqa: ASYNC110
                        await trio.sleep(0.05)
                spawn_seconds = time.monotonic() - spawned
                await _settle()
                after = rss_kib()
                states = {a.state for a in engine.actors()}
                running = len(engine.actors())
                stopping = time.monotonic()
            stop_seconds = time.monotonic() - stopping
    per_actor = (after - base) * 1024 / running
    print(f"10,000 idle monitor actors (paused, stub marketplace, SQLite store): {running} "
          f"running, states {sorted(states)}, spawned in {spawn_seconds:.1f} s, stopped in "
          f"{stop_seconds:.1f} s")  # fmt: skip
    print(f"  RSS {base / 1024:.0f} -> {after / 1024:.0f} MiB: {per_actor / 1024:.1f} KB per "
          f"actor (target < 50 KB) {verdict(per_actor < 50 * 1024)}")  # fmt: skip


async def _settle() -> None:
    for _ in range(3):
        gc.collect()
        await trio.sleep(0.2)


# -- orchestration ----------------------------------------------------------------------------


def _section(name: str, size: str) -> int:
    """One section at `size` ("full", "quick" or "smoke")."""
    if name == "monitors":
        trio.run(_monitors, size)
    elif name == "idle":
        trio.run(_idle, size)
    else:
        from bench._listings_bench import run_listings

        run_listings(name.removeprefix("listings-"), size)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.bench_engine")
    parser.add_argument("--quick", action="store_true", help="shorter runs, smaller data")
    parser.add_argument("--smoke", action="store_true", help="seconds per section, not judged")
    parser.add_argument("--section", choices=SECTIONS, help="run one section in this process")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    size = "smoke" if args.smoke else "quick" if args.quick else "full"
    if args.section:
        return _section(args.section, size)
    print(load_note())
    failed = 0
    for name in SECTIONS:
        command = [sys.executable, "-m", "bench.bench_engine", "--section", name]
        try:
            flags = [] if size == "full" else [f"--{size}"]
            done = subprocess.run(command + flags, cwd=ROOT, timeout=900)
            failed |= done.returncode != 0
        except subprocess.TimeoutExpired:
            print(f"{name}: did not finish in 15 minutes")
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
