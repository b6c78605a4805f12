"""HTML parsers (selectolax/Lexbor): catalogue cards in both layouts, and the item page."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from ._fields import absolute, as_int, id_from_path
from ._parse_json import detail_from_item
from ._prices import MONEY, parse_price
from .errors import ParseError
from .models import CataloguePage, ItemDetail, ItemState, Listing

_LINK_ID = re.compile(r"product-item-id-(\d+)--overlay-link")
_CARD_ROOT = re.compile(r"^(grid-item|feed-item|product-item-id-\d+)$")
_DIGITS = re.compile(r"\d[\d\s\u00a0\u202f.,]*")
_STATE_KEYS = ("is_closed", "is_reserved", "item_closing_action", "is_hidden")


def _card_root(link: LexborNode) -> LexborNode:
    """The card a link belongs to: the nearest `grid-item`, else the nearest card-level test id."""
    node = link.parent
    fallback: LexborNode | None = None
    for _ in range(8):
        if node is None:
            break
        testid = node.attributes.get("data-testid") or ""
        if testid == "grid-item":
            return node
        if fallback is None and _CARD_ROOT.match(testid):
            fallback = node
        node = node.parent
    return fallback or link.parent or link


def _text(card: LexborNode, suffix: str) -> str | None:
    node = card.css_first(f'[data-testid$="{suffix}"]')
    if node is None:
        return None
    return node.text(strip=True) or None


@dataclass
class _Parts:
    """What one card showed, gathered in one pass over the document."""

    href: str = ""
    link_testid: str = ""
    label: str = ""
    brand: str | None = None
    subtitle: str | None = None
    price_text: str | None = None
    favourites: str | None = None
    photo_url: str | None = None


def _parts_of(link: LexborNode) -> _Parts:
    """Slow path for unknown layouts: search the card around one overlay link."""
    card = _card_root(link)
    img = card.css_first('img[data-testid$="--image--img"]') or card.css_first("img")
    return _Parts(
        href=link.attributes.get("href") or "",
        link_testid=link.attributes.get("data-testid") or "",
        label=link.attributes.get("title") or "",
        brand=_text(card, "--description-title"),
        subtitle=_text(card, "--description-subtitle"),
        price_text=_text(card, "--price-text"),
        favourites=_text(card, "favourite-count-text"),
        photo_url=img.attributes.get("src") if img is not None else None,
    )


def _grid_parts(tree: LexborHTMLParser) -> list[_Parts] | None:
    """Fast path: one CSS query for every test id, assigned to cards in document order.
    None when the page has no `grid-item` cards (then the slow path decides)."""
    cards: list[_Parts] = []
    current: _Parts | None = None
    for node in tree.css("[data-testid]"):
        testid = node.attributes.get("data-testid") or ""
        if testid == "grid-item":
            current = _Parts()
            cards.append(current)
        elif current is None:
            continue
        elif testid.endswith("--overlay-link"):
            current.href = node.attributes.get("href") or ""
            current.link_testid = testid
            current.label = node.attributes.get("title") or ""
        elif testid.endswith("--description-title"):
            current.brand = node.text(strip=True) or None
        elif testid.endswith("--description-subtitle"):
            current.subtitle = node.text(strip=True) or None
        elif testid.endswith("--price-text"):
            current.price_text = node.text(strip=True) or None
        elif testid == "favourite-count-text":
            current.favourites = node.text(strip=True) or None
        elif testid.endswith("--image--img"):
            current.photo_url = node.attributes.get("src")
    return cards or None


def _card(parts: _Parts, origin: str | None) -> Listing:
    href = parts.href
    match = _LINK_ID.search(parts.link_testid)
    item_id = int(match.group(1)) if match else id_from_path(href)
    if item_id is None:
        raise ValueError(f"card without an item id (href {href[:60]!r})")
    label = parts.label
    title = label.split(", brand:", 1)[0].strip() if ", brand:" in label else None
    brand = parts.brand
    size = condition = None
    subtitle = parts.subtitle
    if subtitle:
        pieces = [p.strip() for p in re.split(r"[·•|]", subtitle) if p.strip()]
        if len(pieces) >= 2:
            size, condition = pieces[0], pieces[-1]
        elif pieces:
            condition = pieces[0]
    if condition is None and (m := re.search(r"condition: ([^,]+)", label)):
        condition = m.group(1).strip()
    if size is None and (m := re.search(r"size: ([^,]+)", label)):
        size = m.group(1).strip()
    price = currency = total = None
    if parts.price_text:
        try:
            price, currency = parse_price(parts.price_text)
        except ValueError:
            price = None
    amounts = MONEY.findall(label.split("includes", 1)[0])
    if amounts:
        try:
            total, total_currency = parse_price(amounts[-1])
            currency = currency or total_currency
        except ValueError:
            total = None
        if price is None and len(amounts) >= 2:
            price, currency = parse_price(amounts[-2])
    favourites = None
    if parts.favourites and (d := _DIGITS.search(parts.favourites)):
        favourites = as_int(re.sub(r"\D", "", d.group(0)))
    values = {
        "title": title, "brand": brand, "size": size, "condition": condition,
        "price": price, "currency": currency, "total_price": total, "favourites": favourites,
        "url": absolute(href or None, origin), "photo_url": absolute(parts.photo_url, origin),
    }  # fmt: skip
    missing = [name for name, value in values.items() if value is None]
    missing += ["category_id", "views", "seller_id", "seller_login", "seller_business"]
    missing.append("listed_at")
    return Listing(id=item_id, missing=tuple(missing), **values)  # type: ignore[arg-type]


def parse_catalogue_html(text: str, *, origin: str | None = None) -> CataloguePage:
    """A catalogue HTML page (layout A or B) -> `CataloguePage`.

    `ParseError` when the page holds no card at all (a block page, a redesign); a single card
    that cannot be read is skipped and described in `problems`.
    """
    if not isinstance(text, str) or not text.strip():
        raise ParseError("catalogue HTML", "empty document")
    tree = LexborHTMLParser(text)
    cards = _grid_parts(tree)
    if cards is None or not any(card.href for card in cards):
        links = tree.css('a[data-testid$="--overlay-link"]')
        cards = [_parts_of(link) for link in links]
    if not cards:
        raise ParseError("catalogue HTML", "no catalogue cards (block page or new layout?)")
    listings: list[Listing] = []
    problems: list[str] = []
    seen: set[int] = set()
    for index, parts in enumerate(cards):
        try:
            listing = _card(parts, origin)
        except (ValueError, ArithmeticError) as err:
            problems.append(f"card {index}: {err}")
            continue
        if listing.id not in seen:
            seen.add(listing.id)
            listings.append(listing)
    return CataloguePage(listings=tuple(listings), problems=tuple(problems))


def _find_item(data: Any, depth: int = 0) -> dict[str, Any] | None:
    """The first object in an embedded store that looks like an item detail."""
    if depth > 12:
        return None
    if isinstance(data, dict):
        if "id" in data and any(key in data for key in _STATE_KEYS):
            return data
        for value in data.values():
            if (found := _find_item(value, depth + 1)) is not None:
                return found
    elif isinstance(data, list):
        for value in data[:200]:
            if (found := _find_item(value, depth + 1)) is not None:
                return found
    return None


def parse_item_page(text: str, *, origin: str | None = None) -> ItemDetail:
    """An item page -> `ItemDetail` from its embedded JSON store (og meta fill the gaps).

    `ParseError` when the page carries no item state (the state is never guessed).
    """
    if not isinstance(text, str) or not text.strip():
        raise ParseError("item page", "empty document")
    tree = LexborHTMLParser(text)
    scripts = tree.css('script[data-js-react-on-rails-store="MainStore"], script#__NEXT_DATA__')
    scripts += tree.css('script[type="application/json"]')
    item: dict[str, Any] | None = None
    for script in scripts:
        try:
            item = _find_item(json.loads(script.text()))
        except ValueError:
            continue
        if item is not None:
            break
    if item is None:
        raise ParseError("item page", "no embedded item state")
    detail = detail_from_item(item, origin)

    def meta(prop: str) -> str | None:
        node = tree.css_first(f'meta[property="{prop}"]')
        return (node.attributes.get("content") or None) if node is not None else None

    listing = detail.listing
    if listing.title is None and (og_title := meta("og:title")):
        listing = _replace(listing, "title", og_title)
    if listing.price is None and (amount := meta("og:price:amount")):
        try:
            price, _ = parse_price(amount)
            listing = _replace(listing, "price", price)
            listing = _replace(listing, "currency", meta("og:price:currency") or listing.currency)
        except ValueError:
            pass
    return ItemDetail(detail.id, detail.state, listing, detail.description, evidence="item_page")


def _replace(listing: Listing, name: str, value: Any) -> Listing:
    from dataclasses import replace

    missing = tuple(m for m in listing.missing if m != name or value is None)
    return replace(listing, **{name: value, "missing": missing})


__all__ = ["ItemState", "parse_catalogue_html", "parse_item_page"]
