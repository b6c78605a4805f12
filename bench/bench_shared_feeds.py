"""Shared marketplace requests (issue #31): what many monitors of one search cost the market.

Run: `python -m bench.bench_shared_feeds [--quick] [--requests-only] [--smoke]`. The request
arms take about 21 minutes (six arms, 9 intervals counted in each) or, with `--quick`, about 6 (four
arms, 3 intervals each) on a loaded 2-core machine; the two benchmarks run after them take
about 4 more.

Monitors of one node share one feed request per distinct search and one item lookup per
listing (`engine/monitors/_shared_feeds.py`), and monitors of one search poll on one grid
(`engine/monitors/_schedule.py`). This benchmark counts the requests the marketplace serves:

- 5 distinct searches (the simulator's first five niches, one catalogue page each) watched by
  1, 10 and 100 monitors each (5, 50 and 500 monitors; each copy of a search in a workspace of
  its own, as ten users watching one search), on one engine (SQLite store), against the
  marketplace simulator in a child process (its CPU is not the engine's);
- **lone** (the baseline, same run): the same monitors with sharing switched off (the engine's
  `SharedMarketplace` replaced by one that sends every request it is asked for, in-flight ones
  included), so each monitor costs what it would cost alone. `--quick` measures the lone arm
  with 10 monitors per search only and takes its per-monitor figure for 1 and 100 as well (a
  lone monitor's cost does not depend on how many others watch its search; the full run
  measures all three).

Time: a monitor polls every 20 s and the simulator's clock runs 15 times faster, so one
interval is the service's default 300 s of market time: the figures are those of 5-minute
monitors. The market is busier than the simulator's default (6,000 listings alive, 12,000 new
a day) so that listings sell while it is watched and item lookups are counted too. Each arm
starts one interval after every monitor has made its first poll (bootstrap requests are not
counted), then counts for 9 intervals (3 with `--quick`): every request the simulator logs
(`/__sim__/requests`: feed requests, item lookups, anything else such as a session warm-up),
divided by monitors x simulated hours of the window (monitor-hours; 12 polls each).

The other two figures issue #31 asks of this change are measured by the benchmarks that
already measure them, run after the table unless `--requests-only` (their own output follows):
poll-to-alert latency p99 (`bench_notify --quick`: poll commit to a verified webhook, target
< 2 s) and the listings page and dashboard CPU per request against a bare hello world
(`bench_api_load --quick --sqlite-only`; issue #31: no worse than 3.2x and 4.4x).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import trio
from sqlalchemy import text

from bench._common import ROOT, load_note, spawn_announcing, stop
from engine import EngineSettings, MarketplaceSettings, open_engine, open_marketplace
from engine.market import Feed
from engine.monitors._shared_feeds import SharedMarketplace
from scrapers.simulator import NICHE_PAIRS, SimulatorConfig, serve_simulator
from store import ConfirmedState, NewMonitor, NewUser, Store, open_store

SEARCHES = 5
PER_SEARCH = (1, 10, 100)
INTERVAL = 20  # real seconds between a monitor's polls
SMOKE_INTERVAL = 5  # `--smoke`'s
SPEED = 15.0  # simulated seconds per real second: one interval is 300 s of market time
LISTINGS, ARRIVALS_PER_DAY = 6000, 12000.0
WINDOW_INTERVALS = 9  # counted, after every monitor's first poll (`--quick`: 3)


class LoneMarketplace(SharedMarketplace):
    """Sharing switched off: every call is a request of its own, as each monitor alone."""

    async def fetch_feed(
        self, url: str, page_cap: int, *, fresh_within: float = 0.0, subscriber: str | None = None
    ) -> Feed:
        return await self.inner.fetch_feed(url, page_cap)

    async def fetch_state(
        self, url: str, item_id: int, *, fresh_within: float = 0.0
    ) -> ConfirmedState:
        return await self.inner.fetch_state(url, item_id)


@dataclass(frozen=True)
class Arm:
    per_search: int
    shared: bool
    monitors: int
    sim_hours: float  # simulated hours counted
    polls: int  # successful polls in the window, every monitor
    kinds: Counter[str]  # requests served in the window, by kind
    refused: int  # of those, answered other than 200
    bootstrap_seconds: float
    held: int = 0  # listings the monitors hold at the end (`monitor_listings` rows)
    described: int = 0  # descriptions of them stored (`site_listings` rows, versions)

    @property
    def requests(self) -> int:
        return sum(self.kinds.values())

    def per_monitor_hour(self, kind: str | None = None) -> float:
        count = self.requests if kind is None else self.kinds[kind]
        return count / (self.monitors * self.sim_hours)


# -- the simulator, in a child process ------------------------------------------------------


def _serve(seed: int) -> None:
    """`python -m bench.bench_shared_feeds simulator SEED`: prints its origin, serves."""
    config = SimulatorConfig(
        seed=seed, speed=SPEED, n_listings=LISTINGS, arrivals_per_day=ARRIVALS_PER_DAY,
        horizon_days=1.0, start=time.time(),
    )  # fmt: skip

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            origin = await nursery.start(serve_simulator, config)
            print(origin, flush=True)

    trio.run(main)


def _start_simulator(seed: int) -> tuple[subprocess.Popen[bytes], str]:
    return spawn_announcing(["bench.bench_shared_feeds", "simulator", str(seed)])


# -- one arm --------------------------------------------------------------------------------


async def _polls(store: Store, workspaces: list[str]) -> dict[str, int]:
    found = {}
    for workspace in workspaces:
        for monitor in await store.monitors.in_workspace(workspace):
            found[monitor.id] = monitor.polls
    return found


async def _wait_for(check: Callable[[], Awaitable[bool]], seconds: float) -> None:
    with trio.fail_after(seconds):
        while not await check():  # noqa: ASYNC110 (the store tells nobody when)
            await trio.sleep(0.5)


async def _run_arm(
    per_search: int, shared: bool, window: float, folder: Path, interval: int
) -> Arm:
    simulator, origin = _start_simulator(seed=7)
    try:
        url = f"sqlite+aiosqlite:///{folder}/arm_{per_search}_{int(shared)}.db"
        async with open_store(url, run_migrations=True) as store:
            return await _measure(store, origin, per_search, shared, window, interval)
    finally:
        stop(simulator)


async def _measure(store: Store, origin: str, per_search: int, shared: bool,
                   window: float, interval: int) -> Arm:  # fmt: skip
    searches = [
        f"{origin}/catalog?catalog[]={category}&brand_ids[]={brand}&order=newest_first"
        for category, brand in NICHE_PAIRS[:SEARCHES]
    ]
    workspaces = []
    for copy in range(per_search):
        user = await store.create_user(NewUser(
            user_id=f"usr_{copy}", workspace_id=f"wsp_{copy}",
            email=f"bench{copy}@example.test", name="bench", password_hash=None,
        ))  # fmt: skip
        workspaces.append(user.workspace_id)
        for search in searches:
            await store.monitors.create(NewMonitor(
                monitor_id=f"mon_{uuid.uuid4().hex[:12]}", workspace_id=user.workspace_id,
                url=search, label=None, interval_seconds=interval, page_cap=1,
            ))  # fmt: skip
    monitors = per_search * SEARCHES
    # Politeness lifted for the local simulator, as in bench_engine.
    settings = MarketplaceSettings(extra_origins=(origin,), rate=0, concurrency=32)
    async with (
        httpx.AsyncClient(base_url=origin, timeout=60) as side,
        open_marketplace(settings) as market,
    ):
        lone = None if shared else LoneMarketplace(market)
        began = time.monotonic()
        async with open_engine(store, market, EngineSettings(grace_seconds=5), shared=lone):

            async def bootstrapped() -> bool:
                return all(n >= 1 for n in (await _polls(store, workspaces)).values())

            await _wait_for(bootstrapped, 600)
            bootstrap = time.monotonic() - began
            # One interval more: every monitor is on its search's grid, and the bootstrap's
            # fetches (which its first tick may reuse) are behind the window.
            await trio.sleep(interval)
            mark = (await side.get("/__sim__/requests", params={"since": 10**9})).json()["next"]
            sim0 = (await side.get("/__sim__/clock")).json()["sim_time"]
            polls0 = await _polls(store, workspaces)
            await trio.sleep(window)
            served = (await side.get("/__sim__/requests", params={"since": mark})).json()
            sim1 = (await side.get("/__sim__/clock")).json()["sim_time"]
            polls1 = await _polls(store, workspaces)
    entries: list[dict[str, Any]] = served["requests"]
    return Arm(
        per_search=per_search, shared=shared, monitors=monitors,
        sim_hours=(sim1 - sim0) / 3600, polls=sum(polls1.values()) - sum(polls0.values()),
        kinds=Counter(_kind(e["path"]) for e in entries),
        refused=sum(1 for e in entries if e["status"] != 200), bootstrap_seconds=bootstrap,
        held=await _count(store, "monitor_listings"),
        described=await _count(store, "site_listings"),
    )  # fmt: skip


async def _count(store: Store, table: str) -> int:
    """Rows of `table` (the arm's database holds this arm alone)."""
    return await store.unit(lambda db: int(db.scalar(text(f"SELECT count(*) FROM {table}"))))


def _kind(path: str) -> str:
    if "/catalog" in path:
        return "feed"
    return "lookup" if "/items/" in path else "other"


# -- the report -----------------------------------------------------------------------------


def _report(arms: list[Arm], quick: bool, interval: int) -> None:
    lone = {a.per_search: a for a in arms if not a.shared}
    minutes = interval * SPEED / 60
    print(f"{SEARCHES} distinct searches, {minutes:g}-minute monitors (a {interval} s interval, "
          f"the simulator {SPEED:g}x faster), one engine, SQLite; requests per monitor-hour of "
          f"market time, after every monitor's first poll")  # fmt: skip
    header = (f"  {'per search':>10} {'monitors':>8} {'arm':>6} {'hours':>5} {'polls/mh':>8} "
              f"{'feeds/mh':>8} {'lookups/mh':>10} {'other/mh':>8} {'total/mh':>8} "
              f"{'refused':>7} {'boot s':>6}  against lone")  # fmt: skip
    print(header)
    for arm in sorted(arms, key=lambda a: (a.per_search, not a.shared)):
        base = lone.get(arm.per_search) or lone[min(lone, key=lambda k: abs(k - arm.per_search))]
        against = ""
        if arm.shared:
            ratio = arm.per_monitor_hour() / base.per_monitor_hour()
            borrowed = "" if base.per_search == arm.per_search else f" (lone x{base.per_search})"
            against = f"{ratio:.3f}x, {1 / ratio:.1f} times fewer{borrowed}"
        mh = arm.monitors * arm.sim_hours
        print(f"  {arm.per_search:>10} {arm.monitors:>8} {'shared' if arm.shared else 'lone':>6} "
              f"{arm.sim_hours:>5.2f} {arm.polls / mh:>8.1f} "
              f"{arm.per_monitor_hour('feed'):>8.2f} {arm.per_monitor_hour('lookup'):>10.3f} "
              f"{arm.per_monitor_hour('other'):>8.3f} {arm.per_monitor_hour():>8.2f} "
              f"{arm.refused:>7} {arm.bootstrap_seconds:>6.0f}  {against}")  # fmt: skip
    for arm in arms:
        if arm.shared:  # per distinct search and market hour: what the marketplace sees
            per_search_hour = arm.requests / (SEARCHES * arm.sim_hours)
            print(f"  shared, {arm.per_search} per search: {per_search_hour:.1f} requests per "
                  f"search-hour ({arm.kinds['feed']} feeds, {arm.kinds['lookup']} lookups, "
                  f"{arm.kinds['other']} other in {arm.sim_hours:.2f} h)")  # fmt: skip
    print("  stored: listings held by the monitors, and their descriptions (stored once per "
          "site and version, whoever holds them)")  # fmt: skip
    for arm in sorted(arms, key=lambda a: (a.per_search, not a.shared)):
        per = arm.described / arm.held if arm.held else 0.0
        print(f"  {'shared' if arm.shared else 'lone':>6} x{arm.per_search:<3} {arm.held:>7} held, "
              f"{arm.described:>6} described ({per:.3f} per listing held)")  # fmt: skip
    if quick:
        print("  (--quick: lone measured with 10 monitors per search; its per-monitor cost "
              "stands for 1 and 100)")  # fmt: skip


# -- orchestration --------------------------------------------------------------------------


async def _requests(quick: bool, smoke: bool, interval: int) -> list[Arm]:
    window = interval * (1 if smoke else 3 if quick else WINDOW_INTERVALS)
    plan = [(k, True) for k in PER_SEARCH] + [(k, False) for k in ((10,) if quick else PER_SEARCH)]
    if smoke:  # that it runs: one small arm of each kind, one interval counted
        plan = [(2, True), (2, False)]
    arms = []
    with tempfile.TemporaryDirectory(prefix="nichescope-bench-") as folder:
        for per_search, shared in plan:
            started = time.monotonic()
            arm = await _run_arm(per_search, shared, window, Path(folder), interval)
            print(f"  arm {'shared' if arm.shared else 'lone'} x{per_search}: {arm.requests} "
                  f"requests, {arm.polls} polls, {time.monotonic() - started:.0f} s",
                  flush=True)  # fmt: skip
            arms.append(arm)
    return arms


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["simulator"]:
        _serve(int(args_in[1]))
        return 0
    parser = argparse.ArgumentParser(prog="bench.bench_shared_feeds")
    parser.add_argument("--quick", action="store_true", help="shorter windows, fewer arms")
    parser.add_argument("--requests-only", action="store_true",
                        help="skip bench_notify and bench_api_load afterwards")  # fmt: skip
    parser.add_argument("--smoke", action="store_true",
                        help="two small arms, one interval, requests only")  # fmt: skip
    args = parser.parse_args(args_in)
    print(load_note(), flush=True)
    started = time.monotonic()
    # The smoke checks that it runs, not what it measures: 5 s polls, one interval counted.
    interval = SMOKE_INTERVAL if args.smoke else INTERVAL
    arms = trio.run(_requests, args.quick, args.smoke, interval)
    print(f"marketplace requests, {time.monotonic() - started:.0f} s:")
    _report(arms, args.quick, interval)
    if args.requests_only or args.smoke:
        print(
            "poll-to-alert p99: python -m bench.bench_notify --quick; listings page and "
            "dashboard CPU against the hello world: python -m bench.bench_api_load --quick"
        )
        return 0
    failed = 0
    for title, command in (
        ("poll-to-alert latency (bench_notify --quick)", ["bench.bench_notify", "--quick"]),
        ("CPU per request against the hello world (bench_api_load --quick --sqlite-only)",
         ["bench.bench_api_load", "--quick", "--sqlite-only"]),
    ):  # fmt: skip
        print(f"== {title}", flush=True)
        done = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, timeout=900)
        failed |= done.returncode != 0
    return failed


if __name__ == "__main__":
    sys.exit(main())
