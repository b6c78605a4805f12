"""The real `Marketplace`: the scrapers package's polite client and adapter behind the
protocol monitors and runs speak, turning its `Listing`s into the store's observations."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import cast
from urllib.parse import urlsplit

import trio

from scrapers import (
    DEFAULT_USER_AGENT,
    Blocked,
    CircuitOpen,
    ClientSettings,
    InvalidCatalogueUrl,
    ItemDetail,
    Listing,
    MarketClient,
    MarketplaceAdapter,
    MarketplaceTimeout,
    MarketplaceUnavailable,
    ParseError,
    ProfileMemory,
    ProfileMoved,
    RateLimited,
    SiteMap,
    SuspiciousAnswer,
    UrlRefused,
)
from store import ConfirmedState, Evidence, ListingState, ObservedListing, Store, to_record

from ._market import CatalogueUrlRefused, Feed, FeedWindow


@dataclass(frozen=True)
class MarketplaceSettings:
    extra_origins: tuple[str, ...] = ()
    rate: float = 1.0  # requests per second per site (its API origin included), shared by all
    burst: int = 3
    concurrency: int = 2
    block_cool_down: float = 120.0  # seconds without requests to a site after a 403 page
    request_timeout: float = 20.0  # one request, headers and body; a timeout fails the call
    profile: str = "auto"  # "auto", "2026-09" or "legacy"
    api_origins: tuple[tuple[str, str], ...] = ()  # (site, api) pairs beyond www. -> api.
    user_agent: str = DEFAULT_USER_AGENT
    proxy: str | None = None  # egress proxy for marketplace traffic only


@dataclass(frozen=True, slots=True)
class OriginReport:
    """What operators see of one marketplace site, as this node knows it."""

    origin: str
    api_origin: str
    profile: str | None  # None: not decided yet (auto, nothing fetched)
    profile_mode: str  # auto, 2026-09 or legacy
    breaker: str
    blocked_for_seconds: float
    last_success_at: datetime | None
    last_block_at: datetime | None
    last_block_kind: str | None
    requests_last_hour: int
    detail_refusals: int
    detail_api_resting: bool
    suspected_blocks: int
    filters_ignored: int
    profile_moves: int


def observed(listing: Listing) -> ObservedListing:
    """The store's observation of a scraped listing: the same fields, `id` as `item_id`."""
    return to_record(ObservedListing, listing, item_id=listing.id)


def confirmation(detail: ItemDetail) -> ConfirmedState:
    return ConfirmedState(
        item_id=detail.id,
        state=cast(ListingState, detail.state.value),
        evidence=cast(Evidence, detail.evidence),
        category_name=detail.listing.category_name,
    )


class StoreProfileMemory:
    """`auto`'s per-site profile choice, kept in the database so every node uses the same."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def recall(self, origin: str) -> str | None:
        return await self._store.market.recall_profile(origin)

    async def remember(self, origin: str, profile: str) -> None:
        await self._store.market.remember_profile(origin, profile)


class ScrapersMarketplace:
    def __init__(self, adapter: MarketplaceAdapter) -> None:
        self.adapter = adapter

    def share_politeness(self, nodes: int) -> None:
        """Cluster mode: split each origin's request budget between `nodes` live nodes."""
        self.adapter.client.share_rate(nodes)

    async def check_url(self, url: str) -> str:
        try:
            query = await self.adapter.query_for(url)
        except (UrlRefused, InvalidCatalogueUrl) as err:
            raise CatalogueUrlRefused(url, err.reason) from err
        return query.catalogue_url()

    async def fetch_feed(self, url: str, page_cap: int) -> Feed:
        query = await self.adapter.query_for(url)
        page = await self.adapter.fetch_feed(query, page_cap)
        return Feed(
            listings=tuple(observed(listing) for listing in page.listings),
            pages=page.page,
            problems=page.problems,
            windows=tuple(FeedWindow(w.organic, w.cut, w.category_id) for w in page.windows),
            market_time=page.market_time,
        )

    async def fetch_state(self, url: str, item_id: int) -> ConfirmedState:
        origin = (await self.adapter.client.check_url(url)).origin
        return confirmation(await self.adapter.fetch_item_detail(origin, item_id))

    def failure_kind(self, error: Exception) -> str | None:
        if isinstance(error, SuspiciousAnswer):
            return error.kind
        if isinstance(error, ProfileMoved):
            return "profile_moved"
        if isinstance(error, Blocked):
            return "blocked"
        if isinstance(error, RateLimited):
            return "rate_limited"
        if isinstance(error, CircuitOpen | MarketplaceUnavailable | MarketplaceTimeout):
            return "unavailable"
        if isinstance(error, ParseError | InvalidCatalogueUrl | UrlRefused):
            return "invalid"
        return None

    def origin_reports(self) -> list[OriginReport]:
        """Every site this node has talked to, with its profile, breaker and counters."""
        reports = []
        now = trio.current_time()
        for origin in self.adapter.client.known_origins():
            status = self.adapter.client.origin_status(origin)
            activity = self.adapter.activity(origin)
            reports.append(
                OriginReport(
                    origin=origin,
                    api_origin=self.adapter.site(origin).api_origin,
                    profile=activity.profile if self.adapter.mode == "auto" else self.adapter.mode,
                    profile_mode=self.adapter.mode,
                    breaker=status.breaker.value,
                    blocked_for_seconds=round(status.blocked_for, 1),
                    last_success_at=status.last_success_at,
                    last_block_at=status.last_block_at,
                    last_block_kind=status.last_block_kind,
                    requests_last_hour=status.requests_last_hour,
                    detail_refusals=activity.detail_refusals,
                    detail_api_resting=activity.detail_rest_until > now,
                    suspected_blocks=activity.suspected_blocks,
                    filters_ignored=activity.filters_ignored,
                    profile_moves=activity.profile_moves,
                )
            )
        return sorted(reports, key=lambda r: r.origin)

    def note_suspicious(self, url: str, kind: str) -> None:
        parts = urlsplit(url)
        self.adapter.note_suspicious(f"{parts.scheme}://{parts.netloc}", kind)


@asynccontextmanager
async def open_marketplace(
    settings: MarketplaceSettings, *, memory: ProfileMemory | None = None
) -> AsyncIterator[ScrapersMarketplace]:
    """One shared client for every monitor and run, so per-site politeness holds across
    them. Its sockets are closed on exit, even on error. `memory` keeps `auto`'s choices."""
    sites = SiteMap(settings.api_origins)
    client_settings = ClientSettings(
        extra_origins=tuple(dict.fromkeys(settings.extra_origins + sites.api_origins)),
        rate=settings.rate,
        burst=settings.burst,
        concurrency=settings.concurrency,
        block_cool_down=settings.block_cool_down,
        request_timeout=settings.request_timeout,
        user_agent=settings.user_agent,
        proxy=settings.proxy,
    )
    async with MarketClient(client_settings) as client:
        adapter = MarketplaceAdapter(client, profile=settings.profile, sites=sites, memory=memory)
        yield ScrapersMarketplace(adapter)
