"""The real `Marketplace`: the scrapers package's polite client and adapter behind the
protocol monitors and runs speak, turning its `Listing`s into the store's observations."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import cast

from scrapers import (
    ClientSettings,
    InvalidCatalogueUrl,
    Listing,
    MarketClient,
    MarketplaceAdapter,
    UrlRefused,
)
from store import ListingState, ObservedListing

from ._market import CatalogueUrlRefused, Feed


@dataclass(frozen=True)
class MarketplaceSettings:
    extra_origins: tuple[str, ...] = ()
    rate: float = 1.0  # requests per second per origin, shared by every monitor
    burst: int = 3
    concurrency: int = 2
    block_cool_down: float = 120.0  # seconds without requests to an origin after a 403


def observed(listing: Listing) -> ObservedListing:
    return ObservedListing(
        item_id=listing.id,
        title=listing.title,
        brand=listing.brand,
        size=listing.size,
        condition=listing.condition,
        category_id=listing.category_id,
        price=listing.price,
        currency=listing.currency,
        favourites=listing.favourites,
        views=listing.views,
        seller_id=listing.seller_id,
        url=listing.url,
        photo_url=listing.photo_url,
        listed_at=listing.listed_at,
    )


class ScrapersMarketplace:
    def __init__(self, adapter: MarketplaceAdapter) -> None:
        self._adapter = adapter

    def share_politeness(self, nodes: int) -> None:
        """Cluster mode: split each origin's request budget between `nodes` live nodes."""
        self._adapter.client.share_rate(nodes)

    async def check_url(self, url: str) -> str:
        try:
            query = await self._adapter.query_for(url)
        except (UrlRefused, InvalidCatalogueUrl) as err:
            raise CatalogueUrlRefused(url, err.reason) from err
        return query.catalogue_url()

    async def fetch_feed(self, url: str, page_cap: int) -> Feed:
        query = await self._adapter.query_for(url)
        page = await self._adapter.fetch_feed(query, page_cap)
        return Feed(
            listings=tuple(observed(listing) for listing in page.listings),
            pages=page.page,
            problems=page.problems,
        )

    async def fetch_state(self, url: str, item_id: int) -> ListingState:
        origin = (await self._adapter.client.check_url(url)).origin
        state = await self._adapter.fetch_item_state(origin, item_id)
        return cast(ListingState, state.value)


@asynccontextmanager
async def open_marketplace(settings: MarketplaceSettings) -> AsyncIterator[ScrapersMarketplace]:
    """One shared client for every monitor and run, so per-origin politeness holds across
    them. Its sockets are closed on exit, even on error."""
    client_settings = ClientSettings(
        extra_origins=settings.extra_origins,
        rate=settings.rate,
        burst=settings.burst,
        concurrency=settings.concurrency,
        block_cool_down=settings.block_cool_down,
    )
    async with MarketClient(client_settings) as client:
        yield ScrapersMarketplace(MarketplaceAdapter(client))
