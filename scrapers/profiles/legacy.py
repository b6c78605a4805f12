"""Profile `legacy`: the marketplace before September 2026.

Catalogue `GET <site>/api/v2/catalog/items` with `*_ids` filters comma-joined; items carry
`brand_title`, `size_title`, `status` (the condition), sometimes `catalog_id`; the detail API
`/api/v2/items/{id}/details` is the state source, the item page's embedded store the fallback
(and its JSON-LD `category`, when the page has one, the category's name).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlencode

from .._jsonld import product_category
from .._parse_html import parse_item_page
from .._parse_json import parse_catalogue_json, parse_item_detail
from .._query import CatalogueQuery
from .._sites import Site
from ..models import CataloguePage, ItemDetail
from ._base import Call, StateSource


@dataclass(frozen=True, slots=True)
class LegacyProfile:
    name: str = "legacy"
    state_sources: tuple[StateSource, ...] = ("detail_api", "item_page")

    def catalogue_call(self, query: CatalogueQuery, site: Site, page: int, per_page: int) -> Call:
        params = urlencode(query.api_params(page, per_page))
        return Call(f"{site.origin}/api/v2/catalog/items?{params}")

    def parse_catalogue(self, content: bytes, site: Site) -> CataloguePage:
        return parse_catalogue_json(content, origin=site.origin)

    def catalogue_moved(self, status: int, body: bytes) -> bool:
        return status in (404, 410)

    def detail_call(self, site: Site, item_id: int) -> Call:
        return Call(f"{site.origin}/api/v2/items/{int(item_id)}/details")

    def parse_detail(self, content: bytes, site: Site) -> ItemDetail:
        return parse_item_detail(content, origin=site.origin)

    def detail_refused(self, status: int, body: bytes) -> bool:
        return False  # before September 2026 a 403 was a block page

    def detail_gone(self, status: int) -> bool:
        return status in (404, 410)

    def item_page_url(self, site: Site, item_id: int) -> str:
        return f"{site.origin}/items/{int(item_id)}"

    def item_page_read(self, content: bytes) -> bool:
        return False  # the embedded store can sit anywhere: read the page whole (within caps)

    def parse_item_page(self, content: bytes, site: Site, item_id: int) -> ItemDetail:
        detail = parse_item_page(content.decode("utf-8", errors="replace"), origin=site.origin)
        # The embedded store names no category; a JSON-LD Product block, where a page has one,
        # does (None otherwise).
        if detail.listing.category_name is None and (name := product_category(content)):
            detail = replace(detail, listing=replace(detail.listing, category_name=name))
        return detail
