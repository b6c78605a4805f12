"""The marketplace as the engine sees it: the `Marketplace` protocol monitors and runs read
through, and its implementation over `scrapers` (sessions kept in the store, sealed)."""

from ._protocol import (
    CatalogueUrlRefused,
    Feed,
    FeedWindow,
    Marketplace,
    OriginReport,
    PastedSession,
    SessionNotTaken,
    SuspectedBlock,
)
from ._scrapers import (
    MarketplaceSettings,
    ScrapersMarketplace,
    StoreProfileMemory,
    open_marketplace,
)
from ._session_vault import StoreSessionVault

__all__ = [
    "CatalogueUrlRefused",
    "Feed",
    "FeedWindow",
    "Marketplace",
    "MarketplaceSettings",
    "OriginReport",
    "PastedSession",
    "ScrapersMarketplace",
    "SessionNotTaken",
    "StoreProfileMemory",
    "StoreSessionVault",
    "SuspectedBlock",
    "open_marketplace",
]
