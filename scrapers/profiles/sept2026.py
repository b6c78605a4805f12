"""Profile `2026-09`: the marketplace since September 2026.

Catalogue `GET <api>/svc-catalogue/items` with `attribute_ids[<name>]` filters (the old names
are accepted and silently ignored, so they are never sent), the headers public clients send,
items shaped as `_parse_svc` reads them. States come from the public item page's JSON-LD; the
detail API is a bonus source that mostly answers 403 code 106 (one endpoint refused, not a block).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlencode

from .._jsonld import parse_item_page_jsonld, product_block_read
from .._parse_json import parse_item_detail
from .._parse_svc import parse_svc_catalogue
from .._query import CatalogueQuery
from .._sites import Site
from ..models import CataloguePage, ItemDetail
from ._base import Call, StateSource

# CatalogueQuery field -> attribute name on today's API.
_ATTRIBUTES: tuple[tuple[str, str], ...] = (
    ("catalog_ids", "catalog"), ("brand_ids", "brand"), ("size_ids", "size"),
    ("status_ids", "status"), ("color_ids", "color"), ("material_ids", "material"),
)  # fmt: skip
# Unknown parameters a user's URL carried are passed through, except the legacy filter names
# (silently ignored by today's API: sending them would only pretend to filter).
_LEGACY_NAMES = frozenset(
    {"catalog", "catalog_ids", "brand_ids", "size_ids", "status_ids", "color_ids", "material_ids"}
)


def _bare(key: str) -> str:
    return key.split("[", 1)[0]


@dataclass(frozen=True, slots=True)
class Sept2026Profile:
    name: str = "2026-09"
    state_sources: tuple[StateSource, ...] = ("item_page", "detail_api")

    def headers(self, site: Site) -> tuple[tuple[str, str], ...]:
        return (
            ("Accept", "application/json"),
            ("Locale", site.locale),
            ("Platform", "web"),
            ("X-Next-App", "marketplace-web"),
            ("Referer", site.referer),
        )

    def catalogue_params(
        self, query: CatalogueQuery, page: int, per_page: int
    ) -> list[tuple[str, str]]:
        params = [("page", str(page)), ("per_page", str(per_page))]
        for field_name, attribute in _ATTRIBUTES:
            ids: tuple[int, ...] = getattr(query, field_name)
            if ids:
                params.append((f"attribute_ids[{attribute}]", ",".join(map(str, ids))))
        params += query.scalar_params()
        params += [(k, v) for k, v in query.extra if _bare(k) not in _LEGACY_NAMES]
        return params

    def catalogue_call(self, query: CatalogueQuery, site: Site, page: int, per_page: int) -> Call:
        params = urlencode(self.catalogue_params(query, page, per_page), safe="[]")
        return Call(f"{site.api_origin}/svc-catalogue/items?{params}", self.headers(site))

    def parse_catalogue(self, content: bytes, site: Site) -> CataloguePage:
        return parse_svc_catalogue(content, origin=site.origin)

    def catalogue_moved(self, status: int, body: bytes) -> bool:
        return status in (404, 410)

    def detail_call(self, site: Site, item_id: int) -> Call:
        return Call(f"{site.origin}/api/v2/items/{int(item_id)}/details", self.headers(site))

    def parse_detail(self, content: bytes, site: Site) -> ItemDetail:
        return parse_item_detail(content, origin=site.origin)

    def detail_refused(self, status: int, body: bytes) -> bool:
        """403 with the API's own JSON error (code 106): that endpoint refuses us. A block is
        an HTML page, so anything that is not such JSON stays a block."""
        if status != 403:
            return False
        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return False
        return isinstance(doc, dict) and isinstance(doc.get("code"), int)

    def detail_gone(self, status: int) -> bool:
        # Today's detail API answers 404 for listings that are still for sale, too: only the
        # item page's 404 proves a listing gone.
        return False

    def item_page_url(self, site: Site, item_id: int) -> str:
        return f"{site.origin}/items/{int(item_id)}"

    def item_page_read(self, content: bytes) -> bool:
        return product_block_read(content)

    def parse_item_page(self, content: bytes, site: Site, item_id: int) -> ItemDetail:
        return parse_item_page_jsonld(content, item_id=item_id, origin=site.origin)
