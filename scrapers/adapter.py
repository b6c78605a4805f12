"""`MarketplaceAdapter`: catalogue feeds and listing states over a `MarketClient`, in whichever
wire profile the marketplace speaks today.

The adapter picks the profile per site (`auto` probes `PROBE_ORDER` and remembers the winner,
through a `ProfileMemory` every cluster node shares), reads one feed per category when a URL
names several (today's items carry no category), refuses answers that visibly ignore their
filters, and asks a listing's state of the profile's sources in order, backing off a source that
keeps refusing. Nothing above `scrapers/` learns which profile served a page.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable
from dataclasses import replace
from typing import Protocol

import trio

from ._believable import check_categories_apart, check_filters
from ._category_names import CategoryNames, with_category
from ._fields import id_from_path
from ._query import CatalogueQuery, parse_catalogue_url
from ._retry import http_date
from ._sites import Site
from ._state_lookup import ask_sources
from .errors import (
    HttpStatusError,
    InvalidCatalogueUrl,
    ParseError,
    ProfileMoved,
    SuspiciousAnswer,
)
from .http import MarketClient
from .models import CataloguePage, FeedWindow, ItemDetail, ItemState, Listing
from .profiles import PROBE_ORDER, PROFILES, WireProfile

# Feeds per URL: one per category (limits what one monitor can make us fetch).
MAX_CATEGORY_FEEDS = 10
# Item page URLs (with their slug) remembered from feeds: asking `/items/<id>` costs a redirect
# to that URL first. Bounded, least recently seen forgotten first.
_ITEM_URLS_KEPT = 100_000


class ProfileMemory(Protocol):
    """Where `auto` keeps the working profile of each site (the database, in the service)."""

    async def recall(self, origin: str) -> str | None: ...

    async def remember(self, origin: str, profile: str) -> None: ...


class _Moved(Exception):
    """This profile's catalogue path answered "not found" (internal: triggers a probe)."""


class MarketplaceAdapter:
    """Speaks the marketplace contract through one shared `MarketClient` (its politeness and
    breaker state are per site, so every adapter on the same client shares them). What it
    learns of a site (profile, sources' health, counters) goes into the client's `SiteState`.

    `profile` is "auto" (default), "2026-09" or "legacy". Errors are `MarketplaceError`s;
    cancellation propagates at once and leaves nothing behind.
    """

    def __init__(
        self,
        client: MarketClient,
        *,
        per_page: int = 96,
        profile: str = "auto",
        memory: ProfileMemory | None = None,
    ) -> None:
        if profile != "auto" and profile not in PROFILES:
            raise ValueError(f"unknown wire profile {profile!r}")
        self.client = client
        self.per_page = per_page
        self.mode = profile
        self._memory = memory
        self._probe_locks: dict[str, trio.Lock] = {}
        self._item_urls: OrderedDict[int, str] = OrderedDict()
        self.category_names = CategoryNames()  # per site, learned from item pages

    # -- sites and profiles ----------------------------------------------------------------------

    def site(self, origin: str) -> Site:
        return self.client.sites.site(origin)

    def note_suspicious(self, origin: str, kind: str) -> None:
        """Count a poll refused as data (`suspected_block`, `filters_ignored`) for operators."""
        self.client.site_state(origin).note_suspicious(kind)

    async def profile_for(self, site: Site) -> WireProfile:
        """The profile in use for `site`: the fixed one, or auto's remembered choice."""
        if self.mode != "auto":
            return PROFILES[self.mode]
        site_state = self.client.site_state(site.origin)
        if site_state.profile is None:
            remembered = await self._memory.recall(site.origin) if self._memory else None
            site_state.profile_stored = remembered in PROFILES
            site_state.profile = remembered if site_state.profile_stored else PROBE_ORDER[0]
        return PROFILES[site_state.profile]  # type: ignore[index]

    async def _worked(self, site: Site, profile: WireProfile) -> None:
        """A catalogue page was read in `profile`: remember it for every node, once."""
        site_state = self.client.site_state(site.origin)
        if self.mode == "auto" and not site_state.profile_stored and self._memory is not None:
            await self._memory.remember(site.origin, profile.name)
            site_state.profile_stored = True

    async def _after_move(self, site: Site, query: CatalogueQuery, failed: str) -> WireProfile:
        """The profile that reads `site` now that `failed` answered "not found": another
        node's finding if the memory has one, else the first in `PROBE_ORDER` whose catalogue
        path answers. Remembered for every node. `ProfileMoved` when none does."""
        if self.mode != "auto":
            raise ProfileMoved(site.origin, (failed,))
        lock = self._probe_locks.setdefault(site.origin, trio.Lock())
        async with lock:
            site_state = self.client.site_state(site.origin)
            if site_state.profile not in (None, failed):  # another task probed meanwhile
                return PROFILES[site_state.profile]  # type: ignore[index]
            remembered = await self._memory.recall(site.origin) if self._memory else None
            candidates = [remembered] if remembered in PROFILES and remembered != failed else []
            candidates += [name for name in PROBE_ORDER if name not in (failed, remembered)]
            tried = [failed]
            for name in candidates:
                assert name is not None
                tried.append(name)
                try:
                    await self._page(PROFILES[name], site, query, 1)
                except _Moved:
                    continue
                site_state.profile = name
                site_state.profile_moves += 1
                site_state.profile_stored = name == remembered
                return PROFILES[name]
            raise ProfileMoved(site.origin, tuple(tried))

    # -- catalogue -------------------------------------------------------------------------------

    async def query_for(self, url: str) -> CatalogueQuery:
        """SSRF-check then parse a user's catalogue URL (`UrlRefused`, `InvalidCatalogueUrl`,
        also for more categories than `MAX_CATEGORY_FEEDS`: each is a feed of its own)."""
        checked = await self.client.check_url(url)
        query = parse_catalogue_url(checked.url)
        if len(query.catalog_ids) > MAX_CATEGORY_FEEDS:
            raise InvalidCatalogueUrl(url, f"more than {MAX_CATEGORY_FEEDS} categories")
        return query

    async def _page(
        self, profile: WireProfile, site: Site, query: CatalogueQuery, page: int
    ) -> CataloguePage:
        """One feed page in `profile`. A page that does not parse is fetched once more
        (truncated bodies happen) before its `ParseError` reaches the caller."""
        call = profile.catalogue_call(query, site, page, self.per_page)
        for attempt in range(2):
            try:
                response = await self.client.get(
                    call.url, api=True, site=site.origin, headers=call.headers
                )
            except HttpStatusError as err:
                if profile.catalogue_moved(err.status, err.body):
                    raise _Moved() from err
                raise
            try:
                result = profile.parse_catalogue(response.content, site)
            except ParseError:
                if attempt == 1:
                    raise
                continue
            if result.market_time is None:  # the body states no time: the answer's `Date` does
                result = replace(result, market_time=http_date(response.headers.get("date")))
            return result
        raise AssertionError("unreachable")

    async def fetch_catalogue_page(self, query: CatalogueQuery, page: int = 1) -> CataloguePage:
        """One feed page in the site's current profile (probing again if it moved)."""
        site = self.site(query.origin)
        profile = await self.profile_for(site)
        try:
            result = await self._page(profile, site, query, page)
        except _Moved:
            profile = await self._after_move(site, query, profile.name)
            result = await self._page(profile, site, query, page)
        await self._worked(site, profile)
        return result

    async def iter_feed(
        self, query: CatalogueQuery, page_cap: int = 5
    ) -> AsyncIterator[CataloguePage]:
        """Feed pages, newest first, until the last page or `page_cap` pages. A page that
        visibly ignores the query's filters raises `SuspiciousAnswer("filters_ignored")`."""
        page = 1
        while page <= page_cap:
            result = await self.fetch_catalogue_page(query, page)
            check_filters(query, result)
            yield result
            last_page = result.total_pages is not None and page >= result.total_pages
            if not result.listings or last_page:
                return
            page += 1

    async def _one_feed(self, query: CatalogueQuery, page_cap: int) -> CataloguePage:
        """One feed, its pages merged in order, and its `FeedWindow`: the organic ids in order
        of first appearance, and whether the page cap cut the reading short."""
        listings: dict[int, Listing] = {}
        organic: dict[int, None] = {}
        problems: list[str] = []
        pages = 0
        last: CataloguePage | None = None
        cut = False
        try:
            async for result in self.iter_feed(query, page_cap):
                pages += 1
                last = result
                for listing in result.listings:
                    listings.setdefault(listing.id, listing)
                    if not listing.promoted:
                        organic.setdefault(listing.id)
                problems += [f"page {result.page}: {p}" for p in result.problems]
                cut = bool(result.listings) and (
                    result.total_pages is None or result.page < result.total_pages
                )
        except SuspiciousAnswer:
            self.note_suspicious(query.origin, "filters_ignored")
            raise
        category = query.catalog_ids[0] if len(query.catalog_ids) == 1 else None
        self._remember_urls(query.origin, listings.values())
        return CataloguePage(
            listings=tuple(listings.values()),
            page=pages,
            total_pages=last.total_pages if last else None,
            total_entries=last.total_entries if last else None,
            problems=tuple(problems),
            market_time=last.market_time if last else None,
            windows=(FeedWindow(tuple(organic), cut, category),),
        )

    async def fetch_feed(self, query: CatalogueQuery, page_cap: int = 5) -> CataloguePage:
        """Every page up to `page_cap` merged into one (duplicates across pages dropped).

        A query naming several categories is read as one feed per category (each up to
        `page_cap` pages), so every listing's category is known; with one category it is that
        one. Each feed keeps its `FeedWindow`: where one category's window ends says nothing
        of another's, so a missing listing is judged against its own category's window. Each
        category's listings carry its name, read from one of its item pages
        (`_category_names`): a page that fails never fails the feed.
        """
        if len(query.catalog_ids) <= 1:
            feed = await self._one_feed(query, page_cap)
            category = query.catalog_ids[0] if query.catalog_ids else None
            return await self._named(query, with_category(feed, category))
        if len(query.catalog_ids) > MAX_CATEGORY_FEEDS:
            raise InvalidCatalogueUrl(query.catalogue_url(), "too many categories")
        feeds = []
        for category in query.catalog_ids:
            feed = await self._one_feed(replace(query, catalog_ids=(category,)), page_cap)
            feeds.append(with_category(feed, category))
        try:
            check_categories_apart(feeds)
        except SuspiciousAnswer:
            self.note_suspicious(query.origin, "filters_ignored")
            raise
        listings: dict[int, Listing] = {}
        for feed in feeds:
            for listing in feed.listings:
                listings.setdefault(listing.id, listing)
        merged = CataloguePage(
            listings=tuple(listings.values()),
            page=sum(f.page for f in feeds),
            total_pages=None,
            total_entries=sum(f.total_entries or 0 for f in feeds),
            problems=tuple(p for f in feeds for p in f.problems),
            market_time=max((f.market_time for f in feeds if f.market_time), default=None),
            windows=tuple(window for f in feeds for window in f.windows),
        )
        return await self._named(query, merged)

    async def _named(self, query: CatalogueQuery, feed: CataloguePage) -> CataloguePage:
        return await self.category_names.name_feed(query.origin, feed, self.read_item_page)

    # -- a listing's state -----------------------------------------------------------------------

    def _remember_urls(self, origin: str, listings: Iterable[Listing]) -> None:
        """Keep each listing's canonical page URL when it is where the site would redirect
        `/items/<id>` (the same origin, that id): anything else the marketplace sent is ignored."""
        prefix = origin.rstrip("/") + "/items/"
        for listing in listings:
            url = listing.url
            if url and url.startswith(prefix) and id_from_path(url) == listing.id:
                self._item_urls[listing.id] = url
                self._item_urls.move_to_end(listing.id)
        while len(self._item_urls) > _ITEM_URLS_KEPT:
            self._item_urls.popitem(last=False)

    def _item_page(self, profile: WireProfile, site: Site, item_id: int) -> str:
        known = self._item_urls.get(int(item_id))
        if known is not None and known.startswith(site.origin + "/items/"):
            return known
        return profile.item_page_url(site, item_id)

    async def read_item_page(self, origin: str, item_id: int) -> ItemDetail:
        """The listing's public item page in the site's profile (at the URL its feed gave,
        read only as far as the profile needs); `MarketplaceError`s as the client raises them."""
        site = self.site(origin)
        profile = await self.profile_for(site)
        response = await self.client.get(
            self._item_page(profile, site, item_id), site=site.origin,
            enough=profile.item_page_read,
        )  # fmt: skip
        return profile.parse_item_page(response.content, site, item_id)

    async def fetch_item_detail(self, origin: str, item_id: int) -> ItemDetail:
        """The listing's state from the profile's sources, best first, with its evidence.

        A source that refuses (today's detail API, a challenged item page) or answers something
        unreadable passes the question to the next; after repeated refusals the detail API
        rests. A "gone" answer (the item page's 404, the legacy detail API's 404/410) means
        `deleted`. When no source answers, the last error propagates (the listing is asked
        about again later), except when every source is unavailable (`_source_health`):
        `SourcesUnavailable`, at once and without a request once they are.
        """
        site = self.site(origin)
        profile = await self.profile_for(site)
        site_state = self.client.site_state(site.origin)
        return await ask_sources(self.client, profile, site_state, item_id, self.read_item_page)

    async def fetch_item_state(self, origin: str, item_id: int) -> ItemState:
        return (await self.fetch_item_detail(origin, item_id)).state
