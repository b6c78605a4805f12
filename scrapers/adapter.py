"""`MarketplaceAdapter`: catalogue queries and item states over a `MarketClient`."""

from __future__ import annotations

from collections.abc import AsyncIterator

from ._parse_html import parse_item_page
from ._parse_json import parse_catalogue_json, parse_item_detail
from ._query import CatalogueQuery, parse_catalogue_url
from .errors import HttpStatusError, MarketplaceError, ParseError
from .http import MarketClient
from .models import CataloguePage, ItemDetail, ItemState, Listing


class MarketplaceAdapter:
    """Speaks the marketplace contract through one shared `MarketClient` (its politeness and
    breaker state are per origin, so every adapter on the same client shares them).

    Errors are `MarketplaceError`s; cancellation propagates at once and leaves nothing behind.
    """

    def __init__(self, client: MarketClient, *, per_page: int = 96) -> None:
        self.client = client
        self.per_page = per_page

    async def query_for(self, url: str) -> CatalogueQuery:
        """SSRF-check then parse a user's catalogue URL (`UrlRefused`, `InvalidCatalogueUrl`)."""
        checked = await self.client.check_url(url)
        return parse_catalogue_url(checked.url)

    async def fetch_catalogue_page(self, query: CatalogueQuery, page: int = 1) -> CataloguePage:
        """One feed page from the JSON API. A page that does not parse is fetched once more
        (truncated bodies happen) before its `ParseError` reaches the caller."""
        url = query.api_url(page, self.per_page)
        for attempt in range(2):
            response = await self.client.get(url, api=True)
            try:
                return parse_catalogue_json(response.content, origin=query.origin)
            except ParseError:
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    async def iter_feed(
        self, query: CatalogueQuery, page_cap: int = 5
    ) -> AsyncIterator[CataloguePage]:
        """Feed pages, newest first, until the last page or `page_cap` pages."""
        page = 1
        while page <= page_cap:
            result = await self.fetch_catalogue_page(query, page)
            yield result
            last_page = result.total_pages is not None and page >= result.total_pages
            if not result.listings or last_page:
                return
            page += 1

    async def fetch_feed(self, query: CatalogueQuery, page_cap: int = 5) -> CataloguePage:
        """Every page up to `page_cap` merged into one (duplicates across pages dropped)."""
        listings: dict[int, Listing] = {}
        problems: list[str] = []
        pages = 0
        last: CataloguePage | None = None
        async for result in self.iter_feed(query, page_cap):
            pages += 1
            last = result
            for listing in result.listings:
                listings.setdefault(listing.id, listing)
            problems += [f"page {result.page}: {p}" for p in result.problems]
        return CataloguePage(
            listings=tuple(listings.values()),
            page=pages,
            total_pages=last.total_pages if last else None,
            total_entries=last.total_entries if last else None,
            problems=tuple(problems),
        )

    async def fetch_item_detail(self, origin: str, item_id: int) -> ItemDetail:
        """The detail API answer, or the item page when the API answer is unusable.

        404/410 from the API (or the page) mean `deleted`; other errors propagate.
        """
        origin = origin.rstrip("/")
        api_url = f"{origin}/api/v2/items/{int(item_id)}/details"
        try:
            response = await self.client.get(api_url, api=True)
            return parse_item_detail(response.content, origin=origin)
        except HttpStatusError as err:
            if err.status in (404, 410):
                return _deleted(item_id)
            api_error: MarketplaceError = err
        except ParseError as err:
            api_error = err
        try:
            page = await self.client.get(f"{origin}/items/{int(item_id)}")
            return parse_item_page(page.text, origin=origin)
        except HttpStatusError as err:
            if err.status in (404, 410):
                return _deleted(item_id)
            raise api_error from err

    async def fetch_item_state(self, origin: str, item_id: int) -> ItemState:
        return (await self.fetch_item_detail(origin, item_id)).state


def _deleted(item_id: int) -> ItemDetail:
    return ItemDetail(int(item_id), ItemState.DELETED, Listing(id=int(item_id), missing=("all",)))
