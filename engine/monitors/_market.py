"""What a monitor needs from the marketplace, as a protocol the scrapers adapter fulfils."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from store import ListingState, ObservedListing


@dataclass(frozen=True, slots=True)
class Feed:
    listings: tuple[ObservedListing, ...]
    pages: int
    problems: tuple[str, ...] = ()


class CatalogueUrlRefused(Exception):
    """A user-supplied catalogue URL that must not be fetched (SSRF guard, not the marketplace)."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"catalogue URL refused: {reason}")
        self.url = url
        self.reason = reason


class Marketplace(Protocol):
    async def check_url(self, url: str) -> str:
        """The normalised catalogue URL, or `CatalogueUrlRefused` if it must not be fetched."""
        ...

    async def fetch_feed(self, url: str, page_cap: int) -> Feed:
        """Every listing of the catalogue URL's feed, up to `page_cap` pages.

        Raises an `Exception` (blocked, rate limited, unreachable, malformed) when the feed
        cannot be read at all; single broken items are skipped and reported in `problems`.
        """
        ...

    async def fetch_state(self, url: str, item_id: int) -> ListingState:
        """The confirmed sale state of one listing (item detail, item page as fallback)."""
        ...
