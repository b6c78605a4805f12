"""Both generations of the marketplace, end to end over real sockets: the simulator in either
wire profile, the real client, adapter and engine poll, a real database, judged against the
simulator's ground truth.

SQLite only: what is judged here is what the service learns from the marketplace; the store's
two backends are covered by tests/store.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
import trio

from api.settings import Settings
from engine import MarketplaceSettings, ScrapersMarketplace, StoreProfileMemory, open_marketplace
from engine.monitors._poll import ConfirmPolicy, poll_once
from scrapers import BreakerState, SuspiciousAnswer
from scrapers.simulator import (
    Faults,
    SimOrigins,
    SimulatorApp,
    SimulatorConfig,
    World,
    create_simulator_app,
    serve_app,
)
from store import MonitorRecord, Store
from tests.api.helpers import assert_envelope, signed_in, wait_active
from tests.conftest import new_monitor, start_service

LEGACY_FILTERS = {"catalog", "catalog[]", "catalog_ids", "brand_ids", "brand_ids[]", "size_ids",
                  "status_ids", "color_ids", "material_ids"}  # fmt: skip
CATEGORIES = "catalog[]=1904&catalog[]=257&catalog[]=1231"


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    path = tmp_path / "profiles.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


@dataclass
class Market:
    app: SimulatorApp
    origins: SimOrigins
    market: ScrapersMarketplace


@asynccontextmanager
async def market_of(
    store: Store, config: SimulatorConfig, *, browser: str = "off"
) -> AsyncIterator[Market]:
    """The simulator on two origins (site and API) and the service's marketplace client on
    `auto`, remembering its profile in `store`; `browser` as `NICHESCOPE_MARKET_BROWSER`."""
    app = create_simulator_app(World(config))
    async with trio.open_nursery() as nursery:
        origins: SimOrigins = await nursery.start(serve_app, app, "127.0.0.1", 0, 0)
        settings = MarketplaceSettings(
            extra_origins=(origins.site, origins.api), rate=0, concurrency=8,
            api_origins=((origins.site, origins.api),), browser=browser,
        )  # fmt: skip
        async with open_marketplace(settings, memory=StoreProfileMemory(store)) as market:
            yield Market(app, origins, market)
        nursery.cancel_scope.cancel()


async def monitor_at(store: Store, url: str) -> MonitorRecord:
    return await new_monitor(store, url=url, page_cap=20)


async def poll(store: Store, market: Market, monitor: MonitorRecord) -> None:
    await poll_once(store, market.market, monitor, now=store.clock(),
                    policy=ConfirmPolicy(per_poll=1000))  # fmt: skip


async def sold_precision_recall(store: Store, market: Market, monitor: MonitorRecord,
                                ) -> tuple[float, float, int]:  # fmt: skip
    """Of the confirmed sales the monitor recorded, the share sold in truth; of the listings it
    saw that truly sold before its last poll began, the share it confirmed sold."""
    events = [e async for e in store.monitors.iter_events(monitor.id)]
    confirmed = {e.item_id for e in events
                 if e.to_state == "sold" and e.evidence in ("item_page", "detail_api")}  # fmt: skip
    seen = {e.item_id for e in events if e.kind == "new"}
    polls = [p async for p in store.monitors.iter_polls(monitor.id)]
    world = market.app.world
    # The simulated instant the last poll started: every sale before it could be seen.
    last_start = max(r["sim_time"] for r in market.app.log if r["path"].startswith("/svc-catalogue")
                     or r["path"] == "/api/v2/catalog/items")  # fmt: skip
    truly_sold = {i for i in seen if world.by_id[i].state_at(float(last_start) - 3600) == "sold"}
    # Sold is final, so a confirmed sale is true when the listing is sold by now (a sale during
    # the last poll, between its feed and its item pages, is a true sale too).
    now = market.app.sim_now()
    true_confirmed = {i for i in confirmed if world.by_id[i].state_at(now) == "sold"}
    precision = len(true_confirmed) / len(confirmed) if confirmed else 0.0
    recall = len(truly_sold & confirmed) / len(truly_sold) if truly_sold else 0.0
    assert len(polls) >= 2
    return precision, recall, len(confirmed)


@pytest.mark.parametrize("profile", ["2026-09", "legacy"])
async def test_each_generation_end_to_end_against_the_truth(store: Store, profile: str) -> None:
    config = SimulatorConfig(
        seed=5, speed=86_400.0, n_listings=400, arrivals_per_day=120, profile=profile,
        promoted_share=0.1 if profile == "2026-09" else 0.0,
        # Today's detail API refuses nine requests in ten (a JSON 403, code 106); before
        # September 2026 it answered, and a 403 was a block page.
        faults=Faults(detail_refusal=0.9 if profile == "2026-09" else 0.0),
    )  # fmt: skip
    async with market_of(store, config) as market:
        site = market.origins.site
        monitor = await monitor_at(store, f"{site}/catalog?{CATEGORIES}&order=newest_first")
        with trio.fail_after(120):
            for _ in range(10):  # about four simulated days
                await poll(store, market, monitor)
                await trio.sleep(0.3)
        precision, recall, confirmed = await sold_precision_recall(store, market, monitor)
        print(f"{profile}: precision {precision:.3f}, recall {recall:.3f}, {confirmed} sales")
        assert confirmed >= 10, confirmed
        assert precision >= 0.95, precision
        assert recall >= 0.8, recall

        catalogue = [r for r in market.app.log
                     if r["path"] in ("/svc-catalogue/items", "/api/v2/catalog/items")]  # fmt: skip
        if profile == "2026-09":
            assert all(r["path"] == "/svc-catalogue/items" and r["api"] for r in catalogue)
            for request in catalogue:  # never a legacy filter name: they are silently ignored
                names = {k for k, _ in parse_qsl(str(request["query"]))}
                assert not names & LEGACY_FILTERS, names
            refused = [r for r in market.app.log if "/details" in r["path"] and r["status"] == 403]
            assert all(r["path"] != "/api/v2/catalog/items" for r in market.app.log)
            # Item pages are asked at the URL the feed gave (no redirect from a bare id).
            pages = [r for r in market.app.log if r["path"].startswith("/items/")]
            assert pages and not [r for r in pages if r["status"] == 301]
        else:
            refused = []
            # auto probed today's path once, found it missing, and stayed on legacy.
            assert sum(r["path"] == "/svc-catalogue/items" for r in market.app.log) <= 2
        assert await store.market.recall_profile(site) == profile
        # Refusals of the detail API never pause or trip the site.
        status = market.market.adapter.client.origin_status(site)
        assert status.breaker is BreakerState.CLOSED and status.blocked_for == 0.0
        assert len(refused) == market.market.adapter.client.site_state(site).detail_refusals
        listings = [listing async for listing in store.monitors.iter_listings(monitor.id)]
        assert {listing.category_id for listing in listings} == {1904, 257, 1231}
        assert all(listing.brand and listing.condition for listing in listings)
        if profile == "2026-09":
            assert any(listing.promoted for listing in listings)
            # The item pages of confirmed listings named their category.
            named = {x.category_name for x in listings
                     if x.state == "sold" and x.state_evidence == "item_page"}  # fmt: skip
            assert named and None not in named, named
            assert all(listing.url and listing.url.startswith(site) for listing in listings)


async def test_detail_refusals_alone_never_pause_the_site(store: Store) -> None:
    """Every detail request refused and every item page unreadable: no state is confirmed,
    the site is never cooled down, and the detail API rests after repeated refusals."""
    config = SimulatorConfig(seed=2, speed=1.0, n_listings=60, profile="2026-09",
                             faults=Faults(detail_refusal=1.0))  # fmt: skip
    async with market_of(store, config) as market:
        adapter = market.market.adapter
        site = market.origins.site
        item_ids = sorted(market.app.world.by_id)[:6]
        for item_id in item_ids:  # the detail API, asked directly as a source of its own
            profile = await adapter.profile_for(adapter.site(site))
            call = profile.detail_call(adapter.site(site), item_id)
            with pytest.raises(Exception, match="endpoint refused"):
                await adapter.client.get(call.url, api=True, site=site, headers=call.headers,
                                         refusal=profile.detail_refused)  # fmt: skip
        status = adapter.client.origin_status(site)
        assert status.blocked_for == 0.0 and status.breaker is BreakerState.CLOSED
        # A feed right after is served at once: nothing was paused.
        monitor = await monitor_at(store, f"{site}/catalog")
        await poll(store, market, monitor)
        assert (await store.monitors.state_counts(monitor.id))["open"] > 0


async def test_lying_answers_create_no_false_dropouts(store: Store) -> None:
    config = SimulatorConfig(seed=3, speed=600.0, n_listings=600, profile="2026-09")
    async with market_of(store, config) as market:
        site = market.origins.site
        # Zara: in four categories (each category has its own brands), so a one-brand feed
        # still holds more than ten listings.
        monitor = await monitor_at(store, f"{site}/catalog?brand_ids[]=12&order=newest_first")
        await poll(store, market, monitor)
        before = await store.monitors.state_counts(monitor.id)
        assert before["open"] >= 10
        events_before = len([e async for e in store.monitors.iter_events(monitor.id)])

        market.app.set_faults(Faults(first_empty=1))
        with pytest.raises(Exception, match="treated as a block"):
            await poll(store, market, monitor)
        market.app.set_faults(Faults(first_ignore_filters=1))
        with pytest.raises(SuspiciousAnswer) as ignored:
            await poll(store, market, monitor)
        assert ignored.value.kind == "filters_ignored"

        # One feed per category: a dropped category filter shows as the same feed twice.
        several = await monitor_at(store, f"{site}/catalog?{CATEGORIES}")
        await poll(store, market, several)
        market.app.set_faults(Faults(rate_ignore_filters=1.0))
        with pytest.raises(SuspiciousAnswer):
            await poll(store, market, several)
        market.app.set_faults(Faults())

        assert await store.monitors.state_counts(monitor.id) == before
        events = [e async for e in store.monitors.iter_events(monitor.id)]
        assert len(events) == events_before  # not one drop-out, not one foreign listing
        listings = [listing async for listing in store.monitors.iter_listings(monitor.id)]
        assert {listing.brand for listing in listings} == {"Zara"}
        site_state = market.market.adapter.client.site_state(site)
        assert site_state.suspected_blocks == 1 and site_state.filters_ignored == 2
        await poll(store, market, monitor)  # and the next honest answer is data again


async def test_auto_follows_a_catalogue_that_moves_mid_run(store: Store) -> None:
    config = SimulatorConfig(seed=4, speed=600.0, n_listings=200, profile="legacy")
    async with market_of(store, config) as market:
        site = market.origins.site
        monitor = await monitor_at(store, f"{site}/catalog?{CATEGORIES}")
        await poll(store, market, monitor)
        assert await store.market.recall_profile(site) == "legacy"
        moved_at = len(market.app.log)
        market.app.set_profile("2026-09")  # the old path answers 404 from now on
        await poll(store, market, monitor)  # this very poll reads the moved catalogue
        polls = [p async for p in store.monitors.iter_polls(monitor.id)]
        assert len(polls) == 2 and all(p.error is None and p.items > 0 for p in polls)
        assert polls[1].items >= polls[0].items * 0.8  # nothing of the poll's data was lost
        after = market.app.log[moved_at:]
        legacy_404 = [r for r in after if r["path"] == "/api/v2/catalog/items"]
        assert legacy_404 and all(r["status"] == 404 for r in legacy_404)
        assert any(r["path"] == "/svc-catalogue/items" and r["status"] == 200 for r in after)
        assert await store.market.recall_profile(site) == "2026-09"
        # A second client (another node) starts on the remembered profile: no probing.
        async with open_marketplace(
            MarketplaceSettings(extra_origins=(site, market.origins.api), rate=0,
                                api_origins=((site, market.origins.api),)),
            memory=StoreProfileMemory(store),
        ) as other:  # fmt: skip
            start = len(market.app.log)
            await other.fetch_feed(f"{site}/catalog?catalog[]=1904", 1)
            paths = [r["path"] for r in market.app.log[start:] if r["path"] != "/"]
            assert "/api/v2/catalog/items" not in paths


async def test_operators_see_each_site_and_users_see_why_a_poll_failed(
    settings: Settings, nursery: trio.Nursery
) -> None:
    config = SimulatorConfig(seed=6, speed=600.0, n_listings=200, profile="2026-09",
                             faults=Faults(detail_refusal=1.0))  # fmt: skip
    app = create_simulator_app(World(config))
    origins: SimOrigins = await nursery.start(serve_app, app, "127.0.0.1", 0, 0)
    settings = settings.model_copy(update={
        "market_origins": (origins.site, origins.api), "market_rate": 0,
        "market_api_origins": ((origins.site, origins.api),), "min_poll_seconds": 1,
    })  # fmt: skip
    service, _ = await start_service(nursery, settings)
    async with service.client() as ops, service.client() as user:
        await signed_in(ops, "ops@example.com")
        await signed_in(user)
        started = await user.post("/api/monitoring/start", json={
            "url": f"{origins.site}/catalog?brand_ids[]=12", "interval_seconds": 1,
        })  # fmt: skip
        monitor_id = started.json()["id"]
        await wait_active(user, monitor_id)

        app.set_faults(Faults(rate_ignore_filters=1.0, detail_refusal=1.0))
        with trio.fail_after(30):
            while (monitor := (await user.get(f"/api/monitoring/{monitor_id}")).json())[
                "last_error_kind"
            ] is None:
                await trio.sleep(0.1)
        assert monitor["last_error_kind"] == "filters_ignored"
        assert monitor["market_profile"] == "2026-09"  # detected, remembered, shown
        assert "filters" in monitor["last_error_explanation"]
        assert monitor["counts"]["open"] > 0  # what the honest polls found is all still there

        assert_envelope(await user.get("/api/ops/origins"), 403, "forbidden")
        body = (await ops.get("/api/ops/origins")).json()
        [site] = [o for o in body["origins"] if o["origin"] == origins.site]
        assert site["profile"] == "2026-09" and site["profile_mode"] == "auto"
        assert site["api_origin"] == origins.api
        assert site["breaker"] == "closed" and site["blocked_for_seconds"] == 0
        assert site["requests_last_hour"] > 0 and site["last_success_at"] is not None
        assert site["filters_ignored"] >= 1 and site["last_block_kind"] is None
        async with ops.stream("GET", "/api/ops/actors/stream") as stream:
            event = None
            async for line in stream.aiter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: ") and event == "origins":
                    data = json.loads(line.removeprefix("data: "))
                    assert [o["origin"] for o in data["origins"]] == [origins.site]
                    break
