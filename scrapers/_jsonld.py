"""A listing's state from the public item page's JSON-LD `Product` block (profile 2026-09).

The real page is megabytes of scripts; the state sits in one small `<script
type="application/ld+json">` block. So extraction is a bounded byte scan, not an HTML parse:
find each ld+json block, decode only that, stop at the first `Product`. `product_block_read`
lets the client stop downloading as soon as the block has arrived.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ._fields import as_str, dig, id_from_path
from ._prices import parse_price
from .errors import ParseError
from .models import ItemDetail, ItemState, Listing

_OPEN_TAG = re.compile(rb"<script[^>]*type\s*=\s*[\"']?application/ld\+json[^>]*>", re.IGNORECASE)
_CLOSE_TAG = re.compile(rb"</script\s*>", re.IGNORECASE)
MAX_BLOCK_BYTES = 256_000  # a Product block is a few kB; a bigger one is not what we look for
# schema.org availability -> state. Only SoldOut and OutOfStock count as sold (what public
# clients count); the page's 404 means gone (deleted or hidden), handled by the caller.
_AVAILABILITY: dict[str, ItemState] = {
    "instock": ItemState.OPEN,
    "limitedavailability": ItemState.OPEN,
    "onlineonly": ItemState.OPEN,
    "instoreonly": ItemState.OPEN,
    "preorder": ItemState.OPEN,
    "backorder": ItemState.OPEN,
    "soldout": ItemState.SOLD,
    "outofstock": ItemState.SOLD,
    "reserved": ItemState.RESERVED,
    "discontinued": ItemState.DELETED,
}


def _blocks(content: bytes) -> list[bytes]:
    """Every complete ld+json block's body, in page order (an unfinished last one is left out)."""
    found: list[bytes] = []
    position = 0
    while (opening := _OPEN_TAG.search(content, position)) is not None:
        closing = _CLOSE_TAG.search(content, opening.end())
        if closing is None:
            break
        found.append(content[opening.end() : closing.start()])
        position = closing.end()
    return found


def _product(data: Any, depth: int = 0) -> dict[str, Any] | None:
    if depth > 4:
        return None
    if isinstance(data, list):
        for entry in data[:50]:
            if (found := _product(entry, depth + 1)) is not None:
                return found
        return None
    if not isinstance(data, dict):
        return None
    kind = data.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "Product" in kinds:
        return data
    return _product(data.get("@graph"), depth + 1)


def find_product(content: bytes) -> dict[str, Any] | None:
    """The first JSON-LD `Product` object of a (possibly partial) page, or None."""
    for body in _blocks(content):
        if len(body) > MAX_BLOCK_BYTES:
            continue
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            continue
        if (product := _product(data)) is not None:
            return product
    return None


def product_block_read(content: bytes) -> bool:
    """True once `content` (the page so far) holds a complete JSON-LD Product block."""
    return find_product(content) is not None


def product_category(content: bytes) -> str | None:
    """The JSON-LD Product's `category` (the path people know the category by), or None."""
    product = find_product(content)
    return as_str(product.get("category")) if product is not None else None


def availability_state(value: Any) -> ItemState | None:
    """`InStock`, `https://schema.org/SoldOut`, `http://schema.org/Reserved` -> a state."""
    text = as_str(value)
    if text is None:
        return None
    name = text.rstrip("/").rsplit("/", 1)[-1].casefold()
    return _AVAILABILITY.get(name)


def parse_item_page_jsonld(
    content: bytes, *, item_id: int, origin: str | None = None
) -> ItemDetail:
    """An item page (or its first part) -> `ItemDetail` with evidence "item_page".

    `ParseError` when no Product block or no known availability is found: the state is never
    guessed from anything else on the page.
    """
    product = find_product(content)
    if product is None:
        raise ParseError("item page", "no JSON-LD Product block")
    offers = product.get("offers")
    if isinstance(offers, list):
        offers = next((o for o in offers if isinstance(o, dict)), None)
    offers = offers if isinstance(offers, dict) else {}
    state = availability_state(offers.get("availability"))
    if state is None:
        shown = str(offers.get("availability"))[:40]
        raise ParseError("item page", f"unknown availability {shown!r}")
    price = None
    if (amount := as_str(offers.get("price"))) is not None:
        try:
            price, _ = parse_price(amount)
        except ValueError:
            price = None
    url = as_str(offers.get("url"))
    if url is not None and url.startswith("/") and origin:
        url = origin.rstrip("/") + url
    listing = Listing(
        id=id_from_path(url) or int(item_id),
        title=as_str(product.get("name")),
        brand=as_str(dig(product, "brand", "name")) or as_str(product.get("brand")),
        category_name=as_str(product.get("category")),
        price=price,
        currency=as_str(offers.get("priceCurrency")),
        url=url,
        missing=("size", "condition", "favourites", "views", "seller_id", "listed_at"),
    )
    return ItemDetail(
        id=int(item_id),
        state=state,
        listing=listing,
        description=as_str(product.get("description")),
        evidence="item_page",
    )
