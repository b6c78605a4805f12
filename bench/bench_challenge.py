"""What the browser challenge costs in marketplace requests, in one run.

Run: `python -m bench.bench_challenge [--smoke]` (about a minute; `--smoke`: one simulated
day per set-up; Debian's chromium for the browser
case, which is skipped without it). One monitor of the 2026-09 simulator (two categories,
400 listings, 10% promoted) polled by the real client, adapter and engine poll over ten
simulated days, in three set-ups:

- **open site** (the baseline): no challenge; the plain warm-up's session; sales confirmed
  from item pages;
- **challenged, browser**: every path of the site origin challenged; a real Chromium opens the
  session, whose cookies and User-Agent the plain client carries to item pages;
- **challenged, no browser**: an operator's token opens the API origin only; item pages and
  the detail API are refused for good, and sales are inferred from absence (likely sales).

Printed per set-up: marketplace requests (every request the simulator served), per poll and
per recorded sale after the bootstrap poll, browser launches (the bootstrap's included), and
the ratio to the baseline. Requests are counted by
the simulator, not by the client, so nothing the client forgets to count is missed.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import trio
import trio_asyncio

from engine import MarketplaceSettings, open_marketplace
from engine.monitors._poll import ConfirmPolicy, poll_once
from scrapers.simulator import SimOrigins, SimulatorConfig, World, create_simulator_app, serve_app
from store import NewMonitor, open_store

DAY = 86_400.0
DAYS = 10.0
CHROMIUM = shutil.which("chromium")
URL = "/catalog?catalog[]=1904&catalog[]=257&order=newest_first"


@dataclass(frozen=True)
class Cost:
    setup: str
    requests: int
    polls: int
    sales: int
    launches: int

    @property
    def per_poll(self) -> float:
        return self.requests / max(1, self.polls)

    @property
    def per_sale(self) -> float:
        return self.requests / max(1, self.sales)


async def _operator_token(site: str) -> str:
    async with httpx.AsyncClient(base_url=site) as sim:
        await sim.post("/__sim__/challenge", json={"www": False})
        token = (await sim.get("/")).cookies["access_token_web"]
        await sim.post("/__sim__/challenge", json={"www": True})
    return token


async def _measure(setup: str, folder: Path, days: float, *, challenge: bool, browser: str) -> Cost:
    config = SimulatorConfig(
        seed=5, speed=DAY, n_listings=400, arrivals_per_day=120, profile="2026-09",
        promoted_share=0.1, challenge_www=challenge,
    )  # fmt: skip
    app = create_simulator_app(World(config))
    database = f"sqlite+aiosqlite:///{folder / (setup.replace(' ', '_') + '.db')}"
    async with (
        trio_asyncio.open_loop(),
        open_store(database, run_migrations=True) as store,
        trio.open_nursery() as n,
    ):
        origins: SimOrigins = await n.start(serve_app, app, "127.0.0.1", 0, 0)
        settings = MarketplaceSettings(
            extra_origins=(origins.site, origins.api), rate=0, concurrency=8,
            api_origins=((origins.site, origins.api),), browser=browser,
        )  # fmt: skip
        async with open_marketplace(settings) as market:
            if challenge and browser == "off":
                token = await _operator_token(origins.site)
                await market.set_operator_session(origins.site, f"access_token_web={token}")
            workspace = await _workspace(store)
            monitor = await store.monitors.create(
                NewMonitor("mon_bench", workspace, origins.site + URL, None, 60, 20)
            )
            policy = ConfirmPolicy(per_poll=1000, absence_polls=2)
            # The bootstrap (and the first browser launch) is not measured: at a simulated
            # day per second, a launch of two seconds would skip two days of the market.
            await poll_once(store, market, monitor, now=store.clock(), policy=policy)
            sold_before = (await store.monitors.listing_counts(monitor.id))["sold"]
            served_before = len(app.log)
            polls, first = 0, app.sim_now()
            while app.sim_now() - first < days * DAY:
                await poll_once(store, market, monitor, now=store.clock(), policy=policy)
                polls += 1
                await trio.sleep(0.3)
            sold = (await store.monitors.listing_counts(monitor.id))["sold"] - sold_before
            browser_source = market.adapter.client.sessions
            launches = getattr(getattr(browser_source, "_browser", None), "launches", 0)
        n.cancel_scope.cancel()
    requests = sum(1 for r in app.log[served_before:] if not r["path"].startswith("/__sim__/"))
    return Cost(setup, requests, polls, sold, launches)


async def _workspace(store: object) -> str:
    from tests.conftest import new_workspace

    return await new_workspace(store)  # type: ignore[arg-type]


async def _run(folder: Path, days: float) -> list[Cost]:
    costs = [await _measure("open site", folder, days, challenge=False, browser="off")]
    if CHROMIUM:
        costs.append(
            await _measure("challenged, browser", folder, days, challenge=True, browser=CHROMIUM)
        )
    costs.append(
        await _measure("challenged, no browser", folder, days, challenge=True, browser="off")
    )
    return costs


def main(argv: list[str] | None = None) -> int:
    smoke = "--smoke" in (sys.argv[1:] if argv is None else argv)
    days = 1.0 if smoke else DAYS
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nichescope-bench-") as folder:
        costs = trio.run(_run, Path(folder), days)
    base = costs[0]
    print(f"one monitor, {days:g} simulated days per set-up, {time.perf_counter() - started:.0f} s")
    for cost in costs:
        print(
            f"  {cost.setup:<24} {cost.requests:>5} requests, {cost.polls} polls, "
            f"{cost.sales} sales recorded, {cost.launches} browser launches: "
            f"{cost.per_poll:.1f} per poll ({cost.per_poll / base.per_poll:.2f}x baseline), "
            f"{cost.per_sale:.2f} per sale ({cost.per_sale / base.per_sale:.2f}x)"
        )
    if not CHROMIUM:
        print("  challenged, browser: skipped (no chromium on the PATH)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
