"""Confirming a listing's state on today's marketplace (profile 2026-09).

1. Item-page state extraction, pages per second, on a page of about 1 MB built around the real
   sample's JSON-LD block (once near the top, once after a megabyte of scripts). Baseline:
   parsing with selectolax (the HTML parser the catalogue pages use) and reading its ld+json
   script. Ours: the bounded byte scan (`parse_item_page_jsonld`). Both read the same bytes:
   the whole page, then the bytes the client reads before it stops (`product_block_read`,
   checked per 64 KiB chunk), which is printed too: stopping early is a saving of its own, not
   a faster parser. Warmed alike, then alternated rounds (3; the ratio is the median of the
   per-round ratios, with its range), in a child process with glibc's malloc thresholds pinned
   (see PINNED_MALLOC).
2. State requests spent per confirmed sale, against the simulator (profile 2026-09) with the
   detail API refused 90% of the time: per arm, one monitor of the whole feed polled hourly
   over simulated days through the real client, adapter, engine poll (`poll_once`) and a
   SQLite store. Ours: the 2026-09 profile as shipped (item page first, detail API second).
   Baseline: the pre-September order (detail API first, item page second), the same profile
   otherwise. Both arms run side by side on two simulators of the same seeded world, polled in
   lockstep; requests are counted in each simulator's own log (redirects included), sales in
   the monitor's events (evidence `item_page` or `detail_api`; `absence` is only a likely
   sale), and each confirmed sale is checked against the world's truth at the end of the poll
   that reported it. The adapter's source-health periods (a source refused for 1,800 s of its
   clock is unavailable, then probed every 600 s) are scaled to the
   simulator's clock, so that they last as long in market time as they would on the real site.

Run: `python -m bench.bench_item_pages [--quick | --smoke]` (`--smoke`: seconds, checks that it
runs). Every figure is measured in this run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trio
import trio_asyncio
from selectolax.lexbor import LexborHTMLParser

from bench._common import ROOT
from bench._fair import alternated, rate, ratios, spread
from engine import ConfirmPolicy, MarketplaceSettings, ScrapersMarketplace, open_marketplace
from engine.monitors._poll import poll_once
from scrapers import PROFILES, parse_item_page_jsonld, product_block_read
from scrapers import _source_health as source_health
from scrapers.simulator import (
    Faults,
    SimListing,
    SimulatorApp,
    SimulatorConfig,
    World,
    create_simulator_app,
    serve_app,
)
from store import MonitorRecord, NewMonitor, NewUser, Store, open_store

# The marketplace's real captures live beside the repository (`../shared/fixtures`), or where
# NICHESCOPE_MARKET_FIXTURES says (as for the parser tests).
FIXTURES = Path(
    os.environ.get("NICHESCOPE_MARKET_FIXTURES")
    or ROOT.parent / "shared" / "fixtures" / "marketplace"
)
# The selectolax baseline decodes and parses a megabyte per page: with glibc's dynamic mmap
# threshold its speed swung about 3x between runs with what the process had freed before.
# Fixed thresholds (every block from the heap, none returned between pages) give both
# extractors the same allocator in every run.
PINNED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20), "MALLOC_TRIM_THRESHOLD_": str(128 << 20)}
CHUNK = 64 * 1024
PAGE_CAP = 6  # feed pages per poll: the whole feed fits (the window never cuts)


def megabyte_page(block_first: bool) -> bytes:
    """The real sample's head and JSON-LD block, with ~1 MB of script before or after it."""
    sample = (FIXTURES / "2026-09" / "item_page_sample.html").read_bytes()
    head, _, rest = sample.partition(b"<body>")
    blob = json.dumps({"state": ["x" * 1000] * 1000}).encode()
    filler = b'<script id="__NEXT_DATA__" type="application/json">' + blob + b"</script>"
    body = b"<body>" + (rest.replace(b"</body>", filler + b"</body>") if block_first
                        else filler + rest)  # fmt: skip
    return head + body


def selectolax_state(page: bytes) -> str:
    node = LexborHTMLParser(page.decode("utf-8")).css_first('script[type="application/ld+json"]')
    assert node is not None
    return str(json.loads(node.text())["offers"]["availability"])


def scan_state(page: bytes) -> str:
    return str(parse_item_page_jsonld(page, item_id=1).state.value)


def bytes_until_enough(page: bytes) -> int:
    read = 0
    while read < len(page):
        read = min(len(page), read + CHUNK)
        if product_block_read(page[:read]):
            return read
    return read


def _compare(what: str, page: bytes, seconds: float, rounds: int) -> None:
    """Both extractors on the same bytes, warmed alike, in alternated rounds."""
    for extract in (selectolax_state, scan_state):
        rate(lambda extract=extract: extract(page), seconds)  # type: ignore[misc]
    ours, base = alternated(
        lambda: rate(lambda: scan_state(page), seconds),
        lambda: rate(lambda: selectolax_state(page), seconds),
        rounds,
    )
    print(f"    {what} ({len(page) / 1e3:,.0f} kB): byte scan {spread(ours, 0)}/s, selectolax "
          f"{spread(base, 0)}/s; {spread(ratios(ours, base))}x")  # fmt: skip


def extraction(seconds: float, rounds: int) -> None:
    """Pages per second of both extractors on the same bytes (the whole page, then the bytes
    the client reads before it stops), in a process of its own (see `_extraction_child`)."""
    env = {**os.environ, **PINNED_MALLOC}
    args = [sys.executable, "-m", "bench.bench_item_pages", "extraction", str(seconds), str(rounds)]
    subprocess.run(args, cwd=ROOT, env=env, check=True)


def _extraction_child(seconds: float, rounds: int) -> None:
    print(f"item-page state extraction (pages/s, higher is better; {rounds} alternated rounds "
          f"of {seconds:g} s each; glibc's malloc thresholds pinned)")  # fmt: skip
    for block_first in (True, False):
        page = megabyte_page(block_first)
        where = "JSON-LD near the top" if block_first else "JSON-LD after 1 MB of scripts"
        assert selectolax_state(page) == "InStock"
        assert scan_state(page) == "open"
        read = bytes_until_enough(page)
        print(f"  {where}; the client stops reading after {read / 1e3:,.0f} kB of "
              f"{len(page) / 1e3:,.0f} kB:")  # fmt: skip
        _compare("whole page", page, seconds, rounds)
        if read < len(page):
            assert selectolax_state(page[:read]) == "InStock"
            _compare("what the client reads", page[:read], seconds, rounds)


# -- 2. requests per confirmed sale ---------------------------------------------------------------

BASELINE = "bench-detail-first"  # registered in PROFILES for the run only
ARMS = (
    ("baseline", BASELINE, "detail API first, item page second"),
    ("ours", "2026-09", "item page first, detail API second"),
)
STATE_PATH = re.compile(r"^/(items/\d+|api/v2/items/\d+/details$)")
DETAIL_PATH = re.compile(r"^/api/v2/items/\d+/details$")
TICK = 3600.0  # market seconds between polls (the monitor's interval)
CONFIRMED = ("item_page", "detail_api")


@dataclass(frozen=True)
class MarketRun:
    """One run's size: market days polled and how fast the simulator's clock goes."""

    days: float
    speed: float  # market seconds per real second
    config: SimulatorConfig


@dataclass
class Arm:
    """One monitor of the same synthetic market, through one profile's source order."""

    name: str
    profile: str
    app: SimulatorApp
    store: Store | None = None
    market: ScrapersMarketplace | None = None
    monitor: MonitorRecord | None = None
    poll_starts: list[float] = field(default_factory=list)  # market times
    poll_ends: dict[str, float] = field(default_factory=dict)  # poll id -> market time
    failures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Tally:
    state_requests: int
    detail_requests: int
    detail_403: int
    page_statuses: str  # item page answers by status, e.g. "301 x120, 200 x120, 404 x20"
    confirmed: int
    confirmed_right: int
    likely: int
    likely_right: int
    true_sales: int
    polls: int
    failures: int
    hours_between_polls: float


def _market_time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


async def _poll(arm: Arm, policy: ConfirmPolicy) -> None:
    """One poll, stamped on the market's clock; a failed poll is counted, never fatal."""
    assert arm.store is not None and arm.market is not None and arm.monitor is not None
    start = arm.app.sim_now()
    arm.poll_starts.append(start)
    try:
        record = await poll_once(arm.store, arm.market, arm.monitor, now=_market_time(start),
                                 policy=policy)  # fmt: skip
    except Exception as err:
        arm.failures.append(f"{type(err).__name__}: {err}")
        return
    arm.poll_ends[record.id] = arm.app.sim_now()


def _sold_by(listing: SimListing | None, when: float) -> bool:
    return listing is not None and listing.state_at(when) == "sold"


async def _tally(arm: Arm) -> Tally:
    """Requests from the simulator's own log; sales from the monitor's events, judged against
    the world's truth at the end of the poll that reported them (sales are final there)."""
    assert arm.store is not None and arm.monitor is not None
    log = arm.app.log
    state = [r for r in log if STATE_PATH.match(str(r["path"]))]
    details = [r for r in state if DETAIL_PATH.match(str(r["path"]))]
    statuses = Counter(r["status"] for r in state if not DETAIL_PATH.match(str(r["path"])))
    world, end = arm.app.world, arm.app.sim_now()
    confirmed = likely = confirmed_right = likely_right = 0
    async for event in arm.store.monitors.iter_events(arm.monitor.id):
        if event.kind != "state" or event.to_state != "sold":
            continue
        right = _sold_by(world.by_id.get(event.item_id), arm.poll_ends.get(event.poll_id, end))
        if event.evidence in CONFIRMED:
            confirmed, confirmed_right = confirmed + 1, confirmed_right + right
        else:
            likely, likely_right = likely + 1, likely_right + right
    # Sales the monitor could have confirmed: watched listings that truly sold between its
    # first poll and the start of its last one.
    first, last = arm.poll_starts[0], arm.poll_starts[-1]
    true_sales = 0
    async for listing in arm.store.monitors.iter_listings(arm.monitor.id):
        sim = world.by_id.get(listing.item_id)
        true_sales += sim is not None and any(
            s == "sold" and first < t <= last for t, s in sim.events
        )
    spacing = (last - first) / max(1, len(arm.poll_starts) - 1) / 3600
    return Tally(
        state_requests=len(state), detail_requests=len(details),
        detail_403=sum(1 for r in details if r["status"] == 403),
        page_statuses=", ".join(f"{k} x{n}" for k, n in sorted(statuses.items(), key=str)),
        confirmed=confirmed, confirmed_right=confirmed_right, likely=likely,
        likely_right=likely_right,
        true_sales=true_sales, polls=len(arm.poll_starts), failures=len(arm.failures),
        hours_between_polls=spacing,
    )  # fmt: skip


async def _measure(run: MarketRun) -> dict[str, Tally]:
    """Both arms side by side in one loop: two simulators of the same seeded world started
    back to back, one store and one marketplace each, polled in lockstep once per market hour."""
    arms = [Arm(name, profile, create_simulator_app(World(run.config)))
            for name, profile, _ in ARMS]  # fmt: skip
    policy = ConfirmPolicy(per_poll=500)
    async with trio_asyncio.open_loop():
        with tempfile.TemporaryDirectory() as folder:
            async with AsyncExitStack() as stack:
                for arm in arms:  # migrations first: the markets' clocks start after
                    url = f"sqlite+aiosqlite:///{folder}/{arm.name}.db"
                    arm.store = await stack.enter_async_context(
                        open_store(url, run_migrations=True)
                    )
                nursery = await stack.enter_async_context(trio.open_nursery())
                origins = [await nursery.start(serve_app, arm.app) for arm in arms]
                for arm, origin in zip(arms, origins, strict=True):
                    assert arm.store is not None
                    settings = MarketplaceSettings(extra_origins=(origin,), rate=0,
                                                   concurrency=16, profile=arm.profile)  # fmt: skip
                    arm.market = await stack.enter_async_context(open_marketplace(settings))
                    user = await arm.store.create_user(NewUser(
                        user_id=f"usr_{arm.name}", workspace_id=f"ws_{arm.name}",
                        email=f"{arm.name}@bench.test", name=None, password_hash=None,
                    ))  # fmt: skip
                    arm.monitor = await arm.store.monitors.create(NewMonitor(
                        monitor_id=f"mon_{arm.name}", workspace_id=user.workspace_id,
                        url=f"{origin}/catalog?order=newest_first", label=arm.name,
                        interval_seconds=int(TICK), page_cap=PAGE_CAP,
                    ))  # fmt: skip
                started = trio.current_time()
                for tick in range(1, int(run.days * 86_400 / TICK) + 1):
                    async with trio.open_nursery() as polls:
                        for arm in arms:
                            polls.start_soon(_poll, arm, policy)
                    await trio.sleep_until(started + tick * TICK / run.speed)
                tallies = {arm.name: await _tally(arm) for arm in arms}
                nursery.cancel_scope.cancel()
    for arm in arms:
        for failure in arm.failures[:3]:
            print(f"    ({arm.name}: failed poll: {failure[:160]})")
    return tallies


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}% ({part}/{whole})" if whole else "   n/a"


def requests_per_sale(quick: bool, smoke: bool = False) -> None:
    days, speed = (0.125, 7200.0) if smoke else (2.0, 7200.0) if quick else (6.0, 7200.0)
    config = SimulatorConfig(
        seed=11, speed=speed, profile="2026-09", n_listings=400, arrivals_per_day=80,
        faults=Faults(detail_refusal=0.9),
    )  # fmt: skip
    run = MarketRun(days, speed, config)
    # The baseline is today's profile with the pre-September source order, registered under a
    # name of its own for this run (the adapter checks the name at construction).
    PROFILES[BASELINE] = replace(PROFILES["2026-09"], state_sources=("detail_api", "item_page"))  # type: ignore[type-var]
    # The adapter's source-health periods run on its own (trio) clock: scaled so that they
    # last as long in market time here as on the real site, not `speed` times longer.
    periods = (source_health.UNAVAILABLE_AFTER, source_health.PROBE_EVERY)
    source_health.UNAVAILABLE_AFTER, source_health.PROBE_EVERY = (x / speed for x in periods)
    try:
        wall = time.perf_counter()
        tallies = trio.run(_measure, run)
        wall = time.perf_counter() - wall
    finally:
        del PROFILES[BASELINE]
        source_health.UNAVAILABLE_AFTER, source_health.PROBE_EVERY = periods
    _report(run, wall, periods, tallies)


def _report(
    run: MarketRun, wall: float, periods: tuple[float, float], tallies: dict[str, Tally]
) -> None:
    config = run.config
    polls = ", ".join(
        f"{name} {t.polls} ({t.failures} failed, one per {t.hours_between_polls:.2f} market h)"
        for name, t in tallies.items()
    )
    print("state requests per confirmed sale (lower is better)")
    print(f"  simulator 2026-09, detail API refused {config.faults.detail_refusal:.0%}, "
          f"{config.n_listings} listings + {config.arrivals_per_day:.0f}/day, {run.days:g} "
          f"market days at {run.speed:.0f}x ({wall:.0f} s); one monitor of the whole feed "
          f"per arm, polled hourly;")  # fmt: skip
    print(f"  polls: {polls}; a source refused for {periods[0]:.0f} market s is unavailable, "
          f"then probed every {periods[1]:.0f} market s")  # fmt: skip
    per_sale = {
        name: t.state_requests / t.confirmed if t.confirmed else float("nan")
        for name, t in tallies.items()
    }
    for name, _, order in ARMS:
        t = tallies[name]
        versus = "" if name == "baseline" else (
            f"  {per_sale['baseline'] / per_sale[name]:4.2f}x fewer than baseline")  # fmt: skip
        print(f"    {name:8} {order:36} {per_sale[name]:6.2f}/sale{versus}")
        print(f"             {t.state_requests} state requests for {t.confirmed} confirmed "
              f"sales: detail API {t.detail_requests} ({t.detail_403} answered 403), item "
              f"pages {t.page_statuses or 'none'}")  # fmt: skip
        print(f"             precision {_share(t.confirmed_right, t.confirmed)} against the "
              f"truth; {_share(t.confirmed_right, t.true_sales)} of the watched listings' "
              f"true sales confirmed; likely sales (absence) {t.likely}"
              + (f", {t.likely_right} of them true" if t.likely else ""))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["extraction"]:  # the child process of `extraction`
        _extraction_child(float(args[1]), int(args[2]))
        return 0
    quick, smoke = "--quick" in args, "--smoke" in args
    extraction(0.05 if smoke else 0.5 if quick else 2.0, 1 if smoke else 3)
    requests_per_sale(quick, smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
