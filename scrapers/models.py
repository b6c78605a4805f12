"""The frozen records the parsers produce."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal


class ItemState(enum.StrEnum):
    """Sale state of one listing, per the table in MARKETPLACE.md."""

    OPEN = "open"
    RESERVED = "reserved"
    SOLD = "sold"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class Listing:
    """One listing as a page showed it. Every field but `id` may be None; `missing` names the
    fields that were absent or unparseable, so callers can tell "unknown" from "zero"."""

    id: int
    title: str | None = None
    brand: str | None = None
    size: str | None = None
    condition: str | None = None
    category_id: int | None = None
    price: Decimal | None = None
    currency: str | None = None
    total_price: Decimal | None = None
    favourites: int | None = None
    views: int | None = None
    seller_id: int | None = None
    seller_login: str | None = None
    seller_business: bool | None = None
    url: str | None = None
    photo_url: str | None = None
    listed_at: datetime | None = None
    missing: tuple[str, ...] = ()
    condition_raw: str | None = None  # the label as the site wrote it; `condition` is canonical
    category_name: str | None = None
    service_fee: Decimal | None = None
    promoted: bool = False  # a paid placement: says nothing about the feed's date order


@dataclass(frozen=True, slots=True)
class FeedWindow:
    """One newest-first feed as it was read: the ids of its organic (not promoted) listings in
    the feed's order, and whether the page cap stopped the reading before the feed's end.

    A newest-first feed is ordered by publication, not by id (ids are allotted when a draft is
    made, so a listing published now may carry an id days older than its neighbours): what a
    monitor can tell of where the window ends is this order, never the ids. Promoted listings
    are left out: they are placed out of date order and say nothing about the window.
    """

    organic: tuple[int, ...]
    cut: bool  # older listings may lie beyond the last one read
    category_id: int | None = None  # the one category the feed was filtered to, if one


@dataclass(frozen=True, slots=True)
class CataloguePage:
    """One feed page: the listings that parsed, and one line per item that did not."""

    listings: tuple[Listing, ...]
    page: int = 1
    total_pages: int | None = None
    total_entries: int | None = None
    problems: tuple[str, ...] = ()
    market_time: datetime | None = None  # the marketplace's own clock, when the answer says it
    # A whole feed (`MarketplaceAdapter.fetch_feed`): one window per feed read, one per
    # category when the URL names several. Empty for a single page as parsed.
    windows: tuple[FeedWindow, ...] = ()


@dataclass(frozen=True, slots=True)
class ItemDetail:
    """The item detail API or the public item page reduced to a state + listing, with the
    source that established the state (`evidence`: "detail_api" or "item_page")."""

    id: int
    state: ItemState
    listing: Listing
    description: str | None = None
    evidence: str = "detail_api"
