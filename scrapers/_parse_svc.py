"""Today's catalogue (`/svc-catalogue/items`, profile 2026-09) -> `CataloguePage`.

Items carry no brand, size, condition or category fields any more: the brand is
`item_box.first_line`, size and condition are `item_box.second_line` joined by " · " (the
condition in the site's language), the URL is relative and there is no upload timestamp.
"""

from __future__ import annotations

from typing import Any

from ._conditions import canonical_condition
from ._fields import Missing, absolute, as_bool, as_int, as_money, as_str, dig, item_id_of
from ._parse_json import catalogue_page, main_photo
from .models import CataloguePage, Listing

_SEPARATOR = " · "


def split_second_line(line: str | None) -> tuple[str | None, str | None, str | None]:
    """`"L · Nuovo senza cartellino"` -> (size "L", canonical "New without tags", raw label).

    The last part is the condition and the rest the size; a single part is a condition when it
    reads as one, else a size. An unknown condition label comes back raw with canonical None.
    """
    if not line:
        return None, None, None
    parts = [p.strip() for p in line.split(_SEPARATOR.strip())]
    parts = [p for p in parts if p]
    if not parts:
        return None, None, None
    if len(parts) == 1:
        only = parts[0]
        canonical = canonical_condition(only)
        return (None, canonical, only) if canonical is not None else (only, None, None)
    raw = parts[-1]
    size = " · ".join(parts[:-1])
    return size, canonical_condition(raw), raw


def listing_from_svc_item(item: Any, origin: str | None = None) -> Listing:
    """One item of today's catalogue -> `Listing`; `ValueError` when it has no usable id."""
    item_id = item_id_of(item)
    missing = Missing()
    keep = missing.keep

    price, currency = as_money(item.get("price"))
    total, _ = as_money(item.get("total_item_price"))
    fee, _ = as_money(item.get("service_fee"))
    user = item.get("user") if isinstance(item.get("user"), dict) else {}
    size, condition, condition_raw = split_second_line(as_str(dig(item, "item_box", "second_line")))
    promoted = as_bool(item.get("promoted")) is True or (
        item.get("content_source") == "search_promoted_items"
    )
    return Listing(
        id=item_id,
        title=keep("title", as_str(item.get("title"))),
        brand=keep("brand", as_str(dig(item, "item_box", "first_line"))),
        size=keep("size", size),
        condition=keep("condition", condition),
        condition_raw=condition_raw,
        category_id=keep("category_id", None),  # the caller knows it from the query, if at all
        price=keep("price", price),
        currency=keep("currency", currency),
        total_price=keep("total_price", total),
        service_fee=fee,
        favourites=keep("favourites", as_int(item.get("favourite_count"))),
        views=keep("views", as_int(item.get("view_count"))),
        seller_id=keep("seller_id", as_int(dig(user, "id"))),
        seller_login=keep("seller_login", as_str(dig(user, "login"))),
        seller_business=keep("seller_business", as_bool(dig(user, "business"))),
        url=keep("url", absolute(as_str(item.get("url")), origin)),
        photo_url=keep("photo_url", as_str(dig(main_photo(item), "url"))),
        listed_at=keep("listed_at", None),  # not sent any more; never invented
        promoted=promoted,
        missing=tuple(missing.names),
    )


def parse_svc_catalogue(
    data: bytes | str | dict[str, Any], *, origin: str | None = None
) -> CataloguePage:
    """A `/svc-catalogue/items` answer -> `CataloguePage` (`origin`: the SITE origin, which
    relative item URLs are made absolute against; see `catalogue_page`)."""
    return catalogue_page(data, listing_from_svc_item, origin)
