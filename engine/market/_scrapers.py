"""The real `Marketplace`: the scrapers package's polite client and adapter behind the
protocol monitors and runs speak, turning its `Listing`s into the store's observations."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast
from urllib.parse import urlsplit

import trio

from scrapers import (
    DEFAULT_USER_AGENT,
    Blocked,
    BrowserSessions,
    BrowserSettings,
    BrowserSource,
    ChallengeRequired,
    CircuitOpen,
    ClientSettings,
    InvalidCatalogueUrl,
    ItemDetail,
    Listing,
    MarketClient,
    MarketplaceAdapter,
    MarketplaceTimeout,
    MarketplaceUnavailable,
    MarketSession,
    NoSession,
    ParseError,
    ProfileMemory,
    ProfileMoved,
    RateLimited,
    SessionRefused,
    SessionVault,
    SiteMap,
    SiteState,
    SourcesUnavailable,
    SuspiciousAnswer,
    UrlRefused,
    find_browser,
    operator_session,
)
from store import ConfirmedState, Evidence, ListingState, ObservedListing, Store, to_record

from ._protocol import (
    CatalogueUrlRefused,
    Feed,
    FeedWindow,
    OriginReport,
    PastedSession,
    SessionNotTaken,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MarketplaceSettings:
    extra_origins: tuple[str, ...] = ()
    rate: float = 1.0  # requests per second per egress (every site sent through it), shared
    burst: int = 3
    concurrency: int = 2
    block_cool_down: float = 120.0  # seconds without requests to a site after a 403 page
    request_timeout: float = 20.0  # one request, headers and body; a timeout fails the call
    profile: str = "auto"  # "auto", "2026-09" or "legacy"
    api_origins: tuple[tuple[str, str], ...] = ()  # (site, api) pairs beyond www. -> api.
    user_agent: str = DEFAULT_USER_AGENT
    proxy: str | None = None  # egress proxy for marketplace traffic only
    # A real browser for sites that hand their session only to one: "auto" (Debian's chromium
    # or Playwright's own, when found), "off" or a Chromium executable's path.
    browser: str = "off"
    browser_timeout: float = 45.0


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
    def __init__(self, adapter: MarketplaceAdapter, vault: SessionVault | None = None) -> None:
        self.adapter = adapter
        self._vault = vault

    def share_politeness(self, nodes: int) -> None:
        """Cluster mode: split each origin's request budget between `nodes` live nodes."""
        self.adapter.client.share_rate(nodes)

    async def check_url(self, url: str) -> str:
        try:
            query = await self.adapter.query_for(url)
        except (UrlRefused, InvalidCatalogueUrl) as err:
            raise CatalogueUrlRefused(url, err.reason) from err
        return query.catalogue_url()

    async def fetch_feed(
        self,
        url: str,
        page_cap: int,
        *,
        fresh_within: float = 0.0,
        subscriber: str | None = None,
    ) -> Feed:
        """Always a request: sharing is `SharedMarketplace`'s (the arguments are its)."""
        query = await self.adapter.query_for(url)
        page = await self.adapter.fetch_feed(query, page_cap)
        return Feed(
            listings=tuple(observed(listing) for listing in page.listings),
            pages=page.page,
            problems=page.problems,
            windows=tuple(FeedWindow(w.organic, w.cut, w.category_id) for w in page.windows),
            market_time=page.market_time,
        )

    async def fetch_state(
        self, url: str, item_id: int, *, fresh_within: float = 0.0
    ) -> ConfirmedState:
        origin = (await self.adapter.client.check_url(url)).origin
        return confirmation(await self.adapter.fetch_item_detail(origin, item_id))

    def failure_kind(self, error: Exception) -> str | None:
        if isinstance(error, NoSession | ChallengeRequired):
            return "no_session"
        if isinstance(error, SourcesUnavailable):
            return "sources_unavailable"
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
        """Every site this node has talked to, with its profile, breakers, session, state
        sources, egress and counters: each read from the site's one `SiteState`."""
        client = self.adapter.client
        sites = (client.site_state(origin) for origin in client.known_sites())
        return sorted((self._report(site) for site in sites), key=lambda r: r.origin)

    def _report(self, state: SiteState) -> OriginReport:
        client, mode = self.adapter.client, self.adapter.mode
        www, api = state.www.status(state.origin), state.api.status(state.site.api_origin)
        session = client.session_report(state.origin)
        egress = client.egress
        return OriginReport(
            origin=state.origin,
            api_origin=state.site.api_origin,
            profile=state.profile if mode == "auto" else mode,
            profile_mode=mode,
            breaker=www.breaker.value,
            blocked_for_seconds=round(www.blocked_for, 1),
            last_success_at=www.last_success_at,
            last_block_at=www.last_block_at,
            last_block_kind=www.last_block_kind,
            requests_last_hour=www.requests_last_hour,
            detail_refusals=state.detail_refusals,
            detail_api_resting=state.detail_rest_until > trio.current_time(),
            suspected_blocks=state.suspected_blocks,
            filters_ignored=state.filters_ignored,
            profile_moves=state.profile_moves,
            api_breaker=api.breaker.value,
            api_blocked_for_seconds=round(api.blocked_for, 1),
            challenge=session.state,
            challenges=state.challenges,
            session_source=session.source,
            session_expires_at=_at(session.expires_at),
            session_error=session.last_error,
            without_session_since=_at(session.without_since),
            browser=session.browser,
            sources={name: health.describe() for name, health in state.sources.items()},
            egress=egress.name,
            egress_rate=egress.bucket.rate,
            egress_requests_last_hour=egress.requests_last_hour(),
        )

    async def set_operator_session(
        self, site: str, cookie_text: str, user_agent: str | None = None
    ) -> MarketSession:
        """Use the session an operator pasted for `site`, on this node at once and on the
        others through the vault. `SessionRefused` naming the reason (not a site we may fetch,
        no token, not a JWT, already expired)."""
        session = operator_session(
            site, cookie_text, user_agent, allowed_origins=self.adapter.client.allowed_origins
        )
        if self._vault is not None:
            await self._vault.save(session)
        self.adapter.client.use_session(session)
        return session

    async def take_operator_session(
        self, site: str, cookie_text: str, user_agent: str | None
    ) -> PastedSession:
        try:
            session = await self.set_operator_session(site, cookie_text, user_agent)
        except SessionRefused as err:
            raise SessionNotTaken(f"session refused: {err.reason}") from err
        expires = session.expires_at
        return PastedSession(
            site=session.site,
            source=session.source,
            expires_at=None if expires is None else datetime.fromtimestamp(expires, UTC),
            challenge=self.adapter.client.session_report(session.site).state,
        )

    def note_suspicious(self, url: str, kind: str) -> None:
        parts = urlsplit(url)
        self.adapter.note_suspicious(f"{parts.scheme}://{parts.netloc}", kind)


def market_browser(settings: MarketplaceSettings) -> BrowserSource | None:
    """The browser `settings.browser` names, or None (off, or auto and none found: a site
    that challenges plain clients then needs a pasted session). `ValueError` for a path that
    is not an executable."""
    if find_browser(settings.browser) is None:
        if settings.browser.strip().lower() == "auto":
            log.info("no Chromium found: sites that challenge plain clients need a session")
        return None
    return BrowserSessions(
        BrowserSettings(settings.browser, settings.browser_timeout, proxy=settings.proxy)
    )


def _at(unix: float | None) -> datetime | None:
    return None if unix is None else datetime.fromtimestamp(unix, UTC)


@asynccontextmanager
async def open_marketplace(
    settings: MarketplaceSettings,
    *,
    memory: ProfileMemory | None = None,
    vault: SessionVault | None = None,
    browser: BrowserSource | None = None,
) -> AsyncIterator[ScrapersMarketplace]:
    """One shared client for every monitor and run, so per-site politeness holds across
    them. Its sockets are closed on exit, even on error. `memory` keeps `auto`'s choices,
    `vault` shares sessions between nodes, `browser` (default: the one `settings.browser`
    names) opens sessions the site gives only to a real browser."""
    browser = browser if browser is not None else market_browser(settings)
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
    async with MarketClient(client_settings, browser=browser, vault=vault, sites=sites) as client:
        adapter = MarketplaceAdapter(client, profile=settings.profile, memory=memory)
        yield ScrapersMarketplace(adapter, vault)
