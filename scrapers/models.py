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
class CataloguePage:
    """One feed page: the listings that parsed, and one line per item that did not."""

    listings: tuple[Listing, ...]
    page: int = 1
    total_pages: int | None = None
    total_entries: int | None = None
    problems: tuple[str, ...] = ()
    market_time: datetime | None = None  # the marketplace's own clock, when the answer says it
    # A merged feed cut short by its page cap: the lowest id among its organic (not promoted)
    # listings. Ids grow with time, so a listing with a higher id that is missing has left
    # the feed; a lower one may just have slid out of the window. None: read to its end.
    window_floor: int | None = None


@dataclass(frozen=True, slots=True)
class ItemDetail:
    """The item detail API or the public item page reduced to a state + listing, with the
    source that established the state (`evidence`: "detail_api" or "item_page")."""

    id: int
    state: ItemState
    listing: Listing
    description: str | None = None
    evidence: str = "detail_api"
