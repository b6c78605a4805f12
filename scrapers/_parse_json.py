"""JSON API parsers: catalogue page -> `CataloguePage`, item detail -> `ItemDetail`."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ._conditions import canonical_condition
from ._fields import (
    Missing,
    absolute,
    as_bool,
    as_int,
    as_money,
    as_str,
    as_timestamp,
    dig,
    item_id_of,
)
from .errors import ParseError
from .models import CataloguePage, ItemDetail, ItemState, Listing

ItemParser = Callable[[Any, "str | None"], Listing]
"""`item_listing(item, origin)`: one catalogue item -> `Listing`, `ValueError` when unusable."""


def load_object(data: bytes | str | dict[str, Any], what: str) -> dict[str, Any]:
    if isinstance(data, bytes | str):
        try:
            data = json.loads(data)
        except (ValueError, UnicodeDecodeError) as err:
            raise ParseError(what, f"not JSON ({err})") from err
    if not isinstance(data, dict):
        raise ParseError(what, f"expected a JSON object, got {type(data).__name__}")
    return data


def main_photo(item: dict[str, Any]) -> dict[str, Any] | None:
    photo = item.get("photo")
    if isinstance(photo, dict):
        return photo
    photos = item.get("photos")
    if isinstance(photos, list):
        dicts = [p for p in photos if isinstance(p, dict)]
        main = [p for p in dicts if p.get("is_main")]
        chosen = main or dicts
        return chosen[0] if chosen else None
    return None


def listing_from_item(item: Any, origin: str | None = None) -> Listing:
    """One catalogue or detail item -> `Listing`; `ValueError` when it has no usable id."""
    item_id = item_id_of(item)
    missing = Missing()
    keep = missing.keep

    price, currency = as_money(item.get("price"), item.get("currency"))
    total, _ = as_money(item.get("total_item_price"), item.get("currency"))
    fee, _ = as_money(item.get("service_fee"), item.get("currency"))
    condition_raw = as_str(item.get("status"))
    user = item.get("user") if isinstance(item.get("user"), dict) else {}
    photo = main_photo(item)
    brand = as_str(item.get("brand_title")) or as_str(dig(item, "brand_dto", "title"))
    url = as_str(item.get("url")) or absolute(as_str(item.get("path")), origin)
    return Listing(
        id=item_id,
        title=keep("title", as_str(item.get("title"))),
        brand=keep("brand", brand),
        size=keep("size", as_str(item.get("size_title"))),
        # The legacy `status` is the condition's English label; an unknown one stays raw only.
        condition=keep("condition", canonical_condition(condition_raw)),
        condition_raw=condition_raw,
        category_id=keep("category_id", as_int(item.get("catalog_id"))),
        price=keep("price", price),
        currency=keep("currency", currency),
        total_price=keep("total_price", total),
        service_fee=fee,
        promoted=as_bool(item.get("promoted")) is True,
        favourites=keep("favourites", as_int(item.get("favourite_count"))),
        views=keep("views", as_int(item.get("view_count"))),
        seller_id=keep("seller_id", as_int(dig(user, "id"))),
        seller_login=keep("seller_login", as_str(dig(user, "login"))),
        seller_business=keep("seller_business", as_bool(dig(user, "business"))),
        url=keep("url", url),
        photo_url=keep("photo_url", as_str(dig(photo, "url"))),
        listed_at=keep("listed_at", as_timestamp(dig(photo, "high_resolution", "timestamp"))),
        missing=tuple(missing.names),
    )


def catalogue_page(
    data: bytes | str | dict[str, Any], item_listing: ItemParser, origin: str | None = None
) -> CataloguePage:
    """A catalogue answer of either generation -> `CataloguePage`, each item read by
    `item_listing`, the pagination (and the market's clock, `pagination.time`, when stated)
    read the same way for both.

    Raises `ParseError` when the document is not a catalogue answer at all (not JSON, no
    `items` list); a single bad item is skipped and described in `problems`.
    """
    doc = load_object(data, "catalogue JSON")
    items = doc.get("items")
    if not isinstance(items, list):
        raise ParseError("catalogue JSON", "no `items` list")
    listings: list[Listing] = []
    problems: list[str] = []
    for index, item in enumerate(items):
        try:
            listings.append(item_listing(item, origin))
        except (ValueError, TypeError, ArithmeticError) as err:
            problems.append(f"item {index}: {err}")
    pagination = doc.get("pagination") if isinstance(doc.get("pagination"), dict) else {}
    stamp = as_int(dig(pagination, "time"))
    return CataloguePage(
        listings=tuple(listings),
        page=as_int(dig(pagination, "current_page")) or 1,
        total_pages=as_int(dig(pagination, "total_pages")),
        total_entries=as_int(dig(pagination, "total_entries")),
        problems=tuple(problems),
        market_time=datetime.fromtimestamp(stamp, UTC) if stamp and 0 < stamp < 10**11 else None,
    )


def parse_catalogue_json(
    data: bytes | str | dict[str, Any], *, origin: str | None = None
) -> CataloguePage:
    """A legacy catalogue API answer -> `CataloguePage` (see `catalogue_page`)."""
    return catalogue_page(data, listing_from_item, origin)


def state_of(item: dict[str, Any]) -> ItemState:
    """MARKETPLACE.md's table: sold > reserved > deleted (hidden/draft) > open."""
    if item.get("item_closing_action") == "sold" or as_bool(item.get("is_closed")):
        return ItemState.SOLD
    if as_bool(item.get("is_reserved")):
        return ItemState.RESERVED
    if as_bool(item.get("is_hidden")) or as_bool(item.get("is_draft")):
        return ItemState.DELETED
    return ItemState.OPEN


def detail_from_item(item: Any, origin: str | None = None) -> ItemDetail:
    if not isinstance(item, dict):
        raise ParseError("item detail", "no item object")
    try:
        listing = listing_from_item(item, origin)
    except ValueError as err:
        raise ParseError("item detail", str(err)) from err
    return ItemDetail(
        id=listing.id,
        state=state_of(item),
        listing=listing,
        description=as_str(item.get("description")),
    )


def parse_item_detail(
    data: bytes | str | dict[str, Any], *, origin: str | None = None
) -> ItemDetail:
    """An item detail API answer (`{"item": {...}}`) -> `ItemDetail`; `ParseError` otherwise."""
    doc = load_object(data, "item detail JSON")
    item = doc.get("item", doc if "id" in doc else None)
    return detail_from_item(item, origin)
