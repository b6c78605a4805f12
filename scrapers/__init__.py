"""scrapers: the polite marketplace client, its SSRF guard, the parsers and the adapter.

Imports nothing else of ours. The simulator lives in `scrapers.simulator` (imported on demand,
so the service does not load it unless asked).
"""

from __future__ import annotations

from ._breaker import BreakerState
from ._browser import BrowserSessions, BrowserSettings, find_browser
from ._conditions import canonical_condition
from ._jsonld import parse_item_page_jsonld, product_block_read
from ._operator_session import operator_session, site_origin
from ._parse_html import parse_catalogue_html, parse_item_page
from ._parse_json import parse_catalogue_json, parse_item_detail
from ._parse_svc import parse_svc_catalogue
from ._pinned import GuardedBackend, GuardedTransport
from ._prices import parse_price
from ._public_url import check_public_url, check_public_url_syntax
from ._query import ORDERS, CatalogueQuery, newest_first, parse_catalogue_url
from ._retry import parse_retry_after
from ._robots import RobotsRules
from ._sessions import (
    MarketSession,
    SessionRefused,
    jwt_expiry,
    parse_cookie_text,
    session_from_cookies,
)
from ._settings import DEFAULT_USER_AGENT, ClientSettings
from ._site_sessions import BrowserSource, SessionReport, SessionVault
from ._site_state import SiteState
from ._sites import Site, SiteMap
from ._ssrf import (
    MARKET_HOSTS,
    MARKET_TLDS,
    NormalisedUrl,
    Resolver,
    check_catalogue_url,
    normalise_origin,
    refuse_non_global,
    system_resolver,
)
from .adapter import MarketplaceAdapter, ProfileMemory
from .errors import (
    Blocked,
    BrowserUnavailable,
    ChallengeRequired,
    CircuitOpen,
    EndpointRefused,
    HttpStatusError,
    InvalidCatalogueUrl,
    MarketplaceError,
    MarketplaceTimeout,
    MarketplaceUnavailable,
    NoSession,
    ParseError,
    ProfileMoved,
    RateLimited,
    ResponseTooLarge,
    RobotsDisallowed,
    SourcesUnavailable,
    SuspiciousAnswer,
    UrlRefused,
)
from .http import MarketClient, MarketResponse, OriginStatus
from .models import CataloguePage, ItemDetail, ItemState, Listing
from .profiles import PROBE_ORDER, PROFILE_MODES, PROFILES, WireProfile

__all__ = [
    "DEFAULT_USER_AGENT",
    "MARKET_HOSTS",
    "MARKET_TLDS",
    "ORDERS",
    "PROBE_ORDER",
    "PROFILES",
    "PROFILE_MODES",
    "Blocked",
    "BreakerState",
    "BrowserSessions",
    "BrowserSettings",
    "BrowserSource",
    "BrowserUnavailable",
    "CataloguePage",
    "CatalogueQuery",
    "ChallengeRequired",
    "CircuitOpen",
    "ClientSettings",
    "EndpointRefused",
    "GuardedBackend",
    "GuardedTransport",
    "HttpStatusError",
    "InvalidCatalogueUrl",
    "ItemDetail",
    "ItemState",
    "Listing",
    "MarketClient",
    "MarketResponse",
    "MarketSession",
    "MarketplaceAdapter",
    "MarketplaceError",
    "MarketplaceTimeout",
    "MarketplaceUnavailable",
    "NoSession",
    "NormalisedUrl",
    "OriginStatus",
    "ParseError",
    "ProfileMemory",
    "ProfileMoved",
    "RateLimited",
    "Resolver",
    "ResponseTooLarge",
    "RobotsDisallowed",
    "RobotsRules",
    "SessionRefused",
    "SessionReport",
    "SessionVault",
    "Site",
    "SiteMap",
    "SiteState",
    "SourcesUnavailable",
    "SuspiciousAnswer",
    "UrlRefused",
    "WireProfile",
    "canonical_condition",
    "check_catalogue_url",
    "check_public_url",
    "check_public_url_syntax",
    "find_browser",
    "jwt_expiry",
    "newest_first",
    "normalise_origin",
    "operator_session",
    "parse_catalogue_html",
    "parse_catalogue_json",
    "parse_catalogue_url",
    "parse_cookie_text",
    "parse_item_detail",
    "parse_item_page",
    "parse_item_page_jsonld",
    "parse_price",
    "parse_retry_after",
    "parse_svc_catalogue",
    "product_block_read",
    "refuse_non_global",
    "session_from_cookies",
    "site_origin",
    "system_resolver",
]  # fmt: skip
