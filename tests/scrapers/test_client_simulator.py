"""The client against the simulator over real sockets (virtual time via autojump_clock)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from scrapers import (
    Blocked,
    BreakerState,
    CircuitOpen,
    HttpStatusError,
    ItemState,
    MarketplaceAdapter,
    MarketplaceTimeout,
    MarketplaceUnavailable,
    ParseError,
    RateLimited,
    ResponseTooLarge,
    RobotsDisallowed,
)
from scrapers.simulator import Faults, SimulatorConfig

from ._sim import client_for, simulator

SMALL = SimulatorConfig(seed=5, n_listings=300, arrivals_per_day=50, horizon_days=10, speed=60)


def config(**faults: Any) -> SimulatorConfig:
    return SimulatorConfig(
        seed=SMALL.seed, n_listings=SMALL.n_listings, arrivals_per_day=SMALL.arrivals_per_day,
        horizon_days=SMALL.horizon_days, speed=SMALL.speed, faults=Faults(**faults),
    )  # fmt: skip


def assert_no_request_inside_windows(log: list[dict[str, Any]], window: float) -> int:
    """Every 429 opened a window of `window` seconds; nothing may arrive inside it."""
    windows = [r["t"] for r in log if r["status"] == 429]
    for opened in windows:
        inside = [r for r in log if opened < r["t"] < opened + window - 1e-6]
        assert inside == [], f"requests inside the Retry-After window: {inside}"
    assert not any(r["early"] for r in log)
    return len(windows)


@pytest.mark.parametrize("as_date", [False, True])
async def test_retry_after_honoured(autojump_clock: trio.abc.Clock, as_date: bool) -> None:
    async with simulator(config(first_429=3, retry_after=7, retry_after_as_date=as_date)) as sim:
        async with client_for(sim.origin) as client:
            adapter = MarketplaceAdapter(client, profile="legacy")
            query = await adapter.query_for(f"{sim.origin}/catalog?catalog[]=1904")
            start = trio.current_time()
            page = await adapter.fetch_catalogue_page(query, 1)
            assert page.listings
            # A date has one-second resolution: the simulator rounds it up by one second.
            window = 7 if not as_date else 8
            assert trio.current_time() - start >= 3 * window - 1
        api = [r for r in sim.app.log if r["path"].startswith("/api/")]
        assert [r["status"] for r in api] == [429, 429, 429, 200]
        assert assert_no_request_inside_windows(sim.app.log, window) == 3


async def test_per_client_rate_limit_is_obeyed(autojump_clock: trio.abc.Clock) -> None:
    async with simulator(config(client_rate=2.0, client_burst=3)) as sim:
        async with client_for(
            sim.origin, rate=50, burst=20, concurrency=8, max_retries=8
        ) as client:
            adapter = MarketplaceAdapter(client, profile="legacy")
            ids = [listing.id for listing in (await adapter.fetch_catalogue_page(
                await adapter.query_for(f"{sim.origin}/catalog"), 1)).listings[:12]]  # fmt: skip
            states: list[ItemState] = []

            async def one(item_id: int) -> None:
                states.append(await adapter.fetch_item_state(sim.origin, item_id))

            async with trio.open_nursery() as nursery:
                for item_id in ids:
                    nursery.start_soon(one, item_id)
        assert len(states) == 12
        limited = [r for r in sim.app.log if r["status"] == 429]
        assert limited, "the simulator's per-client limit should have been hit"
        assert not any(r["early"] for r in sim.app.log)


async def test_long_retry_after_raises_instead_of_waiting(autojump_clock: trio.abc.Clock) -> None:
    async with simulator(config(first_429=1, retry_after=900)) as sim:  # noqa: SIM117 (one server, one client, read apart)
        async with client_for(sim.origin, max_retry_wait=60) as client:
            adapter = MarketplaceAdapter(client, profile="legacy")
            query = await adapter.query_for(f"{sim.origin}/catalog")
            with pytest.raises(RateLimited) as info:
                await adapter.fetch_catalogue_page(query)
            assert info.value.retry_in == 900
            before = len(sim.app.log)
            with pytest.raises(RateLimited):  # still inside the window: nothing is sent
                await adapter.fetch_catalogue_page(query)
            assert len(sim.app.log) == before
            assert client.origin_status(sim.origin).blocked_for == pytest.approx(900, abs=1)


async def test_breaker_opens_and_recovers(autojump_clock: trio.abc.Clock) -> None:
    async with simulator(config(rate_5xx=1.0)) as sim:  # noqa: SIM117 (one server, one client, read apart)
        async with client_for(sim.origin, breaker_threshold=3, breaker_reset=30,
                              max_retries=5) as client:  # fmt: skip
            adapter = MarketplaceAdapter(client, profile="legacy")
            query = await adapter.query_for(f"{sim.origin}/catalog")
            with pytest.raises(CircuitOpen):
                await adapter.fetch_catalogue_page(query)
            assert client.breaker_state(sim.origin) is BreakerState.OPEN
            failures = [r for r in sim.app.log if r["status"] == 503]
            assert len(failures) == 3
            sent = len(sim.app.log)
            with pytest.raises(CircuitOpen):
                await adapter.fetch_catalogue_page(query)
            assert len(sim.app.log) == sent  # an open breaker sends nothing
            sim.app.set_faults(Faults())  # the marketplace heals
            await trio.sleep(30)
            assert client.breaker_state(sim.origin) is BreakerState.HALF_OPEN
            page = await adapter.fetch_catalogue_page(query)
            assert page.listings
            assert client.breaker_state(sim.origin) is BreakerState.CLOSED


async def test_transient_5xx_retried(autojump_clock: trio.abc.Clock) -> None:
    async with simulator(config(first_5xx=2)) as sim:
        async with client_for(sim.origin) as client:
            adapter = MarketplaceAdapter(client, profile="legacy")
            page = await adapter.fetch_catalogue_page(
                await adapter.query_for(f"{sim.origin}/catalog")
            )
            assert page.listings
        statuses = [r["status"] for r in sim.app.log if r["path"].startswith("/api/")]
        assert statuses == [503, 503, 200]
        assert client.breaker_state(sim.origin) is BreakerState.CLOSED


async def test_5xx_outlasting_retries(autojump_clock: trio.abc.Clock) -> None:
    async with simulator(config(rate_5xx=1.0)) as sim:  # noqa: SIM117 (one server, one client, read apart)
        async with client_for(sim.origin, max_retries=2, breaker_threshold=10) as client:
            adapter = MarketplaceAdapter(client, profile="legacy")
            with pytest.raises(MarketplaceUnavailable, match="HTTP 503"):
                await adapter.fetch_catalogue_page(await adapter.query_for(f"{sim.origin}/catalog"))


async def test_token_expiry_recovered(autojump_clock: trio.abc.Clock) -> None:
    cfg = config()
    cfg = SimulatorConfig(**{**{f: getattr(cfg, f) for f in cfg.__slots__}, "token_ttl": 5.0})  # type: ignore[attr-defined]
    async with simulator(cfg) as sim:
        async with client_for(sim.origin) as client:
            adapter = MarketplaceAdapter(client, profile="legacy")
            query = await adapter.query_for(f"{sim.origin}/catalog")
            await adapter.fetch_catalogue_page(query)
            await trio.sleep(10)  # the token expires
            page = await adapter.fetch_catalogue_page(query)
            assert page.listings
        trail = [(r["path"].split("?")[0], r["status"]) for r in sim.app.log]
        assert trail == [
            ("/robots.txt", 200), ("/", 200), ("/api/v2/catalog/items", 200),
            ("/api/v2/catalog/items", 401), ("/", 200), ("/api/v2/catalog/items", 200),
        ]  # fmt: skip


async def test_block_page_cools_the_origin_down(autojump_clock: trio.abc.Clock) -> None:
    async with simulator(config(first_403=1)) as sim:
        async with client_for(sim.origin, block_cool_down=120, max_retry_wait=600) as client:
            adapter = MarketplaceAdapter(client, profile="legacy")
            query = await adapter.query_for(f"{sim.origin}/catalog")
            with pytest.raises(Blocked):
                await adapter.fetch_catalogue_page(query)
            blocked_at = trio.current_time()
            await adapter.fetch_catalogue_page(query)  # waits the cool-down out
            assert trio.current_time() - blocked_at >= 120
        after = [r for r in sim.app.log if r["t"] > blocked_at]
        assert after and min(r["t"] for r in after) >= blocked_at + 120


async def test_truncated_page_refetched_once_then_parse_error(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with simulator(config(first_truncated=1)) as sim, client_for(sim.origin) as client:
        adapter = MarketplaceAdapter(client, profile="legacy")
        query = await adapter.query_for(f"{sim.origin}/catalog")
        assert (await adapter.fetch_catalogue_page(query)).listings
        sim.app.set_faults(Faults(first_truncated=2))
        with pytest.raises(ParseError, match="not JSON"):
            await adapter.fetch_catalogue_page(query)
        assert (await adapter.fetch_catalogue_page(query)).listings  # and life goes on


async def test_slow_responses_time_out(autojump_clock: trio.abc.Clock) -> None:
    async with simulator(config(rate_slow=1.0, slow_seconds=60)) as sim:  # noqa: SIM117 (one server, one client, read apart)
        async with client_for(sim.origin, request_timeout=5, max_retries=1) as client:
            adapter = MarketplaceAdapter(client, profile="legacy")
            start = trio.current_time()
            with pytest.raises(MarketplaceTimeout):
                await adapter.fetch_catalogue_page(await adapter.query_for(f"{sim.origin}/catalog"))
            assert trio.current_time() - start < 30


async def test_response_size_cap(autojump_clock: trio.abc.Clock) -> None:
    async with simulator(config()) as sim, client_for(sim.origin, max_bytes=2000) as client:
        adapter = MarketplaceAdapter(client, profile="legacy")
        with pytest.raises(ResponseTooLarge):
            await adapter.fetch_catalogue_page(await adapter.query_for(f"{sim.origin}/catalog"))


async def test_robots_disallow_is_honoured(autojump_clock: trio.abc.Clock) -> None:
    cfg = config()
    cfg = SimulatorConfig(**{**{f: getattr(cfg, f) for f in cfg.__slots__},  # type: ignore[attr-defined]
                             "robots_txt": "User-agent: *\nDisallow: /catalog\n"})  # fmt: skip
    async with simulator(cfg) as sim:
        async with client_for(sim.origin) as client:
            with pytest.raises(RobotsDisallowed):
                await client.get(f"{sim.origin}/catalog?catalog[]=1")
            with pytest.raises(HttpStatusError) as info:  # allowed by robots: reaches the server
                await client.get(f"{sim.origin}/items/1")
            assert info.value.status == 404
        assert [r["path"] for r in sim.app.log if r["path"].startswith("/catalog")] == []
        assert sum(r["path"] == "/robots.txt" for r in sim.app.log) == 1  # cached


async def test_drifting_json_still_parses(autojump_clock: trio.abc.Clock) -> None:
    async with simulator(config(ids_as_strings=0.5, rate_missing_fields=0.5)) as sim:
        async with client_for(sim.origin) as client:
            adapter = MarketplaceAdapter(client, profile="legacy")
            query = await adapter.query_for(f"{sim.origin}/catalog")
            page = await adapter.fetch_catalogue_page(query)
        assert len(page.listings) == 96 and page.problems == ()
        assert any(listing.missing for listing in page.listings)


async def test_html_catalogue_and_item_page_fallback(autojump_clock: trio.abc.Clock) -> None:
    from scrapers import parse_catalogue_html, parse_item_page

    async with simulator(config()) as sim, client_for(sim.origin) as client:
        adapter = MarketplaceAdapter(client, profile="legacy")
        query = await adapter.query_for(f"{sim.origin}/catalog?catalog[]=1904&catalog[]=257")
        api_page = await adapter.fetch_catalogue_page(query)
        for _ in range(2):  # the simulator alternates layouts A and B
            html = parse_catalogue_html(await client.get_text(query.catalogue_url()))
            assert [c.id for c in html.listings] == [c.id for c in api_page.listings]
            assert [c.price for c in html.listings] == [c.price for c in api_page.listings]
        first = api_page.listings[0].id
        page = await client.get(f"{sim.origin}/items/{first}")  # 301 to the slug, same origin
        assert page.url.startswith(f"{sim.origin}/items/{first}-")
        assert parse_item_page(page.text).state is ItemState.OPEN


async def test_item_pages_of_every_brand_redirect_to_a_page(autojump_clock: trio.abc.Clock) -> None:
    """Slugs keep a brand's punctuation ("h&m"): the redirect from `/items/<id>` must land on
    a page, never on a 404 that the client reads as "deleted" (found by the kill -9 test)."""
    from scrapers import parse_item_page

    async with simulator(config()) as sim, client_for(sim.origin) as client:
        adapter = MarketplaceAdapter(client, profile="legacy")
        query = await adapter.query_for(f"{sim.origin}/catalog?brand_ids[]=88")  # H&M
        listings = (await adapter.fetch_catalogue_page(query)).listings
        assert listings and all(listing.brand == "H&M" for listing in listings)
        for listing in listings[:10]:
            page = await client.get(f"{sim.origin}/items/{listing.id}")
            assert "&" in page.url or "%26" in page.url, page.url  # the slug kept the "&"
            assert parse_item_page(page.text).state is ItemState.OPEN


@pytest.mark.parametrize("profile", ["legacy", "2026-09"])
async def test_every_catalogue_page_states_the_markets_clock(profile: str) -> None:
    # Today's catalogue says its time in `pagination.time`; the legacy one only in the
    # answer's Date header. Either way the page carries the simulated (market's) time.
    start = 1_790_000_000.0
    market = SimulatorConfig(profile=profile, start=start, speed=3600.0)
    async with simulator(market) as sim, client_for(sim.origin) as client:
        adapter = MarketplaceAdapter(client, profile=profile)
        query = await adapter.query_for(f"{sim.origin}/catalog?catalog[]=1904")
        page = await adapter.fetch_catalogue_page(query, 1)
    assert page.market_time is not None
    # Within the hour the simulator ran at 3600x (a second of real time), never the wall clock.
    assert 0 <= page.market_time.timestamp() - start < 3600 * 5
