"""scrapers: the polite marketplace client, its SSRF guard, the parsers and the adapter.

Imports nothing else of ours. The simulator lives in `scrapers.simulator` (imported on demand,
so the service does not load it unless asked).
"""

from __future__ import annotations

from ._breaker import BreakerState
from ._parse_html import parse_catalogue_html, parse_item_page
from ._parse_json import parse_catalogue_json, parse_item_detail
from ._prices import parse_price
from ._query import ORDERS, CatalogueQuery, parse_catalogue_url
from ._robots import RobotsRules
from ._settings import ClientSettings
from ._ssrf import (
    MARKET_HOSTS,
    MARKET_TLDS,
    ORIGINS_ENV,
    NormalisedUrl,
    Resolver,
    check_catalogue_url,
    normalise_origin,
    origins_from_env,
)
from .adapter import MarketplaceAdapter
from .errors import (
    Blocked,
    CircuitOpen,
    HttpStatusError,
    InvalidCatalogueUrl,
    MarketplaceError,
    MarketplaceTimeout,
    MarketplaceUnavailable,
    ParseError,
    RateLimited,
    ResponseTooLarge,
    RobotsDisallowed,
    UrlRefused,
)
from .http import MarketClient, MarketResponse, OriginStatus
from .models import CataloguePage, ItemDetail, ItemState, Listing

__all__ = [
    "MARKET_HOSTS",
    "MARKET_TLDS",
    "ORDERS",
    "ORIGINS_ENV",
    "Blocked",
    "BreakerState",
    "CataloguePage",
    "CatalogueQuery",
    "CircuitOpen",
    "ClientSettings",
    "HttpStatusError",
    "InvalidCatalogueUrl",
    "ItemDetail",
    "ItemState",
    "Listing",
    "MarketClient",
    "MarketResponse",
    "MarketplaceAdapter",
    "MarketplaceError",
    "MarketplaceTimeout",
    "MarketplaceUnavailable",
    "NormalisedUrl",
    "OriginStatus",
    "ParseError",
    "RateLimited",
    "Resolver",
    "ResponseTooLarge",
    "RobotsDisallowed",
    "RobotsRules",
    "UrlRefused",
    "check_catalogue_url",
    "normalise_origin",
    "origins_from_env",
    "parse_catalogue_html",
    "parse_catalogue_json",
    "parse_catalogue_url",
    "parse_item_detail",
    "parse_item_page",
    "parse_price",
]  # fmt: skip
