"""What the service learns of a challenged marketplace, judged against the simulator's truth
over ten simulated days (real sockets, the real client, adapter, engine poll and database):

- with a real browser's session, item pages answer again and sales are confirmed from them:
  precision >= 0.9 and recall >= 0.7;
- with item pages and the detail API refused for good (no browser; an operator's token opens
  the API origin only), absence is the only signal: the listings recorded as likely sold truly
  left the market (sold or withdrawn) with precision >= 0.95 and recall >= 0.7, and an
  analysis of them says it is built on likely sales.

SQLite only: what is judged is what the service learns; tests/store covers both backends.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

import httpx
import pytest
import trio

from engine.analysis import AnalysisInput, analyse
from engine.monitors._poll import ConfirmPolicy, poll_once
from scrapers.simulator import SimulatorConfig
from store import MonitorRecord, Store
from tests.conftest import new_monitor
from tests.e2e.test_browser_challenge import token_from_unchallenged_site
from tests.e2e.test_market_profiles import Market, market_of
from tests.web.conftest import CHROMIUM, require_chromium

DAY = 86_400.0
URL = "/catalog?catalog[]=1904&catalog[]=257&order=newest_first"


def challenged(store: Store, browser: str) -> AbstractAsyncContextManager[Market]:
    config = SimulatorConfig(
        seed=5, speed=DAY, n_listings=400, arrivals_per_day=120, profile="2026-09",
        promoted_share=0.1, challenge_www=True,
    )  # fmt: skip
    return market_of(store, config, browser=browser)


async def ten_days(store: Store, market: Market, monitor: MonitorRecord) -> list[float]:
    """Poll for ten simulated days; the simulated time each poll started."""
    starts: list[float] = []
    with trio.fail_after(240):
        while not starts or market.app.sim_now() - starts[0] < 10 * DAY:
            starts.append(market.app.sim_now())
            await poll_once(
                store, market.market, monitor, now=store.clock(),
                policy=ConfirmPolicy(per_poll=1000, absence_polls=2),
            )  # fmt: skip
            await trio.sleep(0.3)
    return starts


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_browser_session_confirms_sales_from_item_pages(store: Store) -> None:
    require_chromium()
    async with challenged(store, CHROMIUM) as market:
        monitor = await new_monitor(store, url=market.origins.site + URL, page_cap=20)
        starts = await ten_days(store, market, monitor)
        events = [e async for e in store.monitors.iter_events(monitor.id)]
        world, now = market.app.world, market.app.sim_now()
        www = [r for r in market.app.log if not r["api"]]

    seen = {e.item_id for e in events if e.kind == "new"}
    confirmed = {e.item_id for e in events if e.to_state == "sold" and e.evidence == "item_page"}
    truly_sold = {i for i in seen if world.by_id[i].state_at(starts[-1] - DAY / 24) == "sold"}
    true_sales = {i for i in confirmed if world.by_id[i].state_at(now) == "sold"}
    precision = len(true_sales) / max(1, len(confirmed))
    recall = len(truly_sold & confirmed) / max(1, len(truly_sold))
    print(f"browser session: precision {precision:.3f}, recall {recall:.3f}, {len(confirmed)}")
    assert len(confirmed) >= 10, confirmed
    assert precision >= 0.9, precision
    assert recall >= 0.7, recall
    pages = [r for r in www if r["path"].startswith("/items/")]
    assert pages and all(r["cleared"] for r in pages if r["status"] == 200)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_with_every_source_refused_absence_finds_what_left_the_market(
    store: Store,
) -> None:
    async with challenged(store, "off") as market:
        async with httpx.AsyncClient(base_url=market.origins.site) as sim:
            token = await token_from_unchallenged_site(sim)
        await market.market.set_operator_session(market.origins.site, f"access_token_web={token}")
        monitor = await new_monitor(store, url=market.origins.site + URL, page_cap=20)
        starts = await ten_days(store, market, monitor)
        listings = [x async for x in store.monitors.iter_listings(monitor.id)]
        events = [e async for e in store.monitors.iter_events(monitor.id)]
        world, now = market.app.world, market.app.sim_now()
        site_state = market.market.adapter.client.site_state(market.origins.site)
        www = [r for r in market.app.log if not r["api"]]

    assert {h.describe() for h in site_state.sources.values()} == {"unavailable"}
    # No source could confirm anything, and it was not asked again and again.
    assert not [e for e in events if e.evidence in ("item_page", "detail_api")]
    assert len(www) < 40, len(www)
    seen = {e.item_id for e in events if e.kind == "new"}
    likely = {x.item_id for x in listings if x.state == "sold" and x.state_evidence == "absence"}
    left = {"sold", "deleted"}
    true_likely = {i for i in likely if world.by_id[i].state_at(now) in left}
    # Listings that left the market early enough for two polls to have missed them.
    cutoff = starts[-3]
    truly_left = {i for i in seen if world.by_id[i].state_at(cutoff) in left}
    precision = len(true_likely) / max(1, len(likely))
    recall = len(truly_left & likely) / max(1, len(truly_left))
    print(f"absence: precision {precision:.3f}, recall {recall:.3f}, {len(likely)} likely")
    assert len(likely) >= 10, likely
    assert precision >= 0.95, precision
    assert recall >= 0.7, recall
    # The analysis of that history is built on likely sales, by default, and says so.
    basis = analyse(AnalysisInput.from_records(listings, events, now=None)).sales
    assert (basis.basis, basis.reason) == ("likely", "no_confirmed_sales")
    assert basis.note.startswith("Sales inferred from absence") and "withdrawal" in basis.note
