"""The `2026-09` wire profile: today's catalogue filters, item shape, promoted items and the
JSON-LD item page (MARKETPLACE.md, `fixtures/marketplace/2026-09/`). Pure functions over the
world; the app does routing, auth and faults.
"""

from __future__ import annotations

import html
import json
import random
import uuid
from collections.abc import Iterable
from decimal import Decimal
from functools import lru_cache
from typing import Any

from ._render import fee, size_title, slug
from ._world import FeedFilter, SimListing, World

# Condition labels by locale, keyed by the world's condition ids
# (6 new_with_tags, 1 new_without_tags, 2 very_good, 3 good, 4 satisfactory): MARKETPLACE.md.
CONDITION_LABELS: dict[str, dict[int, str]] = {
    "en": {6: "New with tags", 1: "New without tags", 2: "Very good", 3: "Good",
           4: "Satisfactory"},
    "fr": {6: "Neuf avec étiquette", 1: "Neuf sans étiquette", 2: "Très bon état",
           3: "Bon état", 4: "Satisfaisant"},
    "de": {6: "Neu mit Etikett", 1: "Neu ohne Etikett", 2: "Sehr gut", 3: "Gut",
           4: "Zufriedenstellend"},
    "it": {6: "Nuovo con cartellino", 1: "Nuovo senza cartellino", 2: "Ottime", 3: "Buone",
           4: "Discrete"},
    "es": {6: "Nuevo con etiquetas", 1: "Nuevo sin etiquetas", 2: "Muy bueno", 3: "Bueno",
           4: "Satisfactorio"},
    "nl": {6: "Nieuw met prijskaartje", 1: "Nieuw zonder prijskaartje", 2: "Zeer goed",
           3: "Goed", 4: "Redelijk"},
    "pl": {6: "Nowy z metką", 1: "Nowy bez metki", 2: "Bardzo dobry", 3: "Dobry",
           4: "Zadowalający"},
}  # fmt: skip
# (condition, size) words of `item_box.accessibility_label` ("Condizioni: ..., Taglia: L").
_LABEL_WORDS: dict[str, tuple[str, str]] = {
    "en": ("Condition", "Size"), "fr": ("État", "Taille"), "de": ("Zustand", "Größe"),
    "it": ("Condizioni", "Taglia"), "es": ("Estado", "Talla"), "nl": ("Staat", "Maat"),
    "pl": ("Stan", "Rozmiar"),
}  # fmt: skip
_ATTRIBUTES = ("catalog", "brand", "size", "status")
_AVAILABILITY = {"open": "InStock", "sold": "SoldOut", "reserved": "Reserved"}
_NEW_CONDITIONS = frozenset({6, 1})
PROMOTION_PERIOD = 3600.0  # simulated seconds a page's promoted draw stays the same


def filter_from_pairs(pairs: Iterable[tuple[str, str]]) -> FeedFilter:
    """Filters as today's API reads them: ids only as `attribute_ids[<name>]` (comma-joined or
    repeated). Legacy names (`brand_ids`, `catalog[]`, ...) and unknown attributes (`color`,
    `material`: the world has none) are ignored, as the real site does. `ValueError` on an id
    or price that is not a number (the app answers 400)."""
    ids: dict[str, set[int]] = {name: set() for name in _ATTRIBUTES}
    scalars: dict[str, str] = {}
    for key, value in pairs:
        if key.startswith("attribute_ids[") and key.endswith("]"):
            name = key[len("attribute_ids[") : -1]
            if name in ids:
                ids[name].update(int(v) for v in value.split(",") if v.strip())
        else:
            scalars[key] = value

    def price(name: str) -> Decimal | None:
        value = scalars.get(name)
        return Decimal(value) if value else None

    return FeedFilter(
        catalog_ids=frozenset(ids["catalog"]), brand_ids=frozenset(ids["brand"]),
        size_ids=frozenset(ids["size"]), status_ids=frozenset(ids["status"]),
        price_from=price("price_from"), price_to=price("price_to"),
        search_text=scalars.get("search_text") or None,
    )  # fmt: skip


def with_promoted(
    live: list[SimListing], organic: list[SimListing], share: float, key: str
) -> list[tuple[SimListing, bool]]:
    """The organic page, in its order, with promoted listings inserted at random positions:
    (listing, promoted). Promoted ones are open listings of the same feed (`live`), any age,
    never one already on this page, drawn from `random.Random(key)` so a page is the same for
    the same key (the app keys it by seed, query, page and a period of simulated time). Enough
    are drawn that about `share` of the answer's positions are promoted; none on an empty page
    (an empty answer stays empty)."""
    entries = [(item, False) for item in organic]
    if share <= 0 or not organic:
        return entries
    rng = random.Random(key)
    wanted = max(1, round(len(organic) * share / (1.0 - share)))
    on_page = {item.id for item in organic}
    # Indices, not a copy of the feed: the feed can be thousands of listings per request.
    draw = rng.sample(range(len(live)), min(len(live), wanted + len(organic)))
    chosen = [live[i] for i in draw if live[i].id not in on_page][:wanted]
    for item in chosen:
        entries.insert(rng.randrange(len(entries) + 1), (item, True))
    return entries


def _amount(value: Decimal) -> str:
    return f"{value:.2f}"


def _price_words(value: Decimal, currency: str) -> str:
    return f"{value:.2f} €" if currency == "EUR" else f"{value:.2f} {currency}"


def condition_label(item: SimListing, locale: str) -> str:
    return CONDITION_LABELS[locale][item.status_id]


def catalogue_item(
    world: World, item: SimListing, t: float, origin: str, locale: str, promoted: bool
) -> dict[str, Any]:
    """One item as `/svc-catalogue/items` writes it: relative `url`, brand and size/condition
    only in `item_box`, no upload timestamp, no `brand_title`/`size_title`/`status`/`path`/
    `catalog_id`."""
    currency = world.config.currency
    brand = world.brands[item.brand_id]
    size = size_title(world, item)
    condition = condition_label(item, locale)
    total = item.price + fee(item.price)
    condition_word, size_word = _LABEL_WORDS[locale]
    photo = {
        "id": item.id * 10,
        "image_no": 1,
        "is_main": True,
        "url": f"{origin}/photos/{item.id}.jpg",
        "full_size_url": f"{origin}/photos/{item.id}-full.jpg",
        "high_resolution": {"id": f"hr{item.id}", "orientation": None},
        "width": 600,
        "height": 800,
    }
    return {
        "id": item.id,
        "title": item.title,
        "price": {"amount": _amount(item.price), "currency_code": currency},
        "total_item_price": {"amount": _amount(total), "currency_code": currency},
        "service_fee": {"amount": _amount(fee(item.price)), "currency_code": currency},
        "favourite_count": item.favourites_at(t),
        "view_count": 0 if item.id % 3 else item.views_at(t),  # often 0 on the real site
        "is_favourite": False,
        "url": f"/items/{item.id}-{slug(item)}",
        "promoted": promoted,
        "content_source": "search_promoted_items" if promoted else "search",
        "photo": photo,
        "photos": [dict(photo)],
        "user": {"id": item.seller_id, "login": item.seller_login, "business": item.business},
        "item_box": {
            "first_line": brand,
            "second_line": f"{size} · {condition}" if size else condition,
            "item_id": item.id,
            "accessibility_label": (
                f"{item.title}, Brand: {brand}, {condition_word}: {condition}, "
                + (f"{size_word}: {size}, " if size else "")
                + f"{_price_words(item.price, currency)}, "
                f"{_price_words(total, currency)}"
            ),
            "exposures": [],
        },
        "search_tracking_params": {"score": 1},
        "show_1st_time_seller_discount": False,
    }


def catalogue_body(
    docs: list[dict[str, Any]], page: int, per_page: int, total: int, pages: int, t: float,
    tracking_key: str,
) -> dict[str, Any]:  # fmt: skip
    """The answer's envelope; `time` is the simulated clock (Unix seconds, int)."""
    rng = random.Random(tracking_key)
    ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(3)]
    return {
        "items": docs,
        "pagination": {"current_page": page, "per_page": per_page, "total_entries": total,
                       "total_pages": pages, "time": int(t)},
        "search_tracking_params": {"global_search_session_id": ids[0],
                                   "search_correlation_id": ids[1], "search_session_id": ids[2]},
    }  # fmt: skip


def availability(item: SimListing, state: str) -> str:
    """Bare for odd ids, `https://schema.org/...` for even ones: the real pages show both."""
    value = _AVAILABILITY[state]
    return value if item.id % 2 else f"https://schema.org/{value}"


def item_page(
    world: World, item: SimListing, state: str, origin: str, locale: str, padding: int
) -> bytes:
    """Today's item page: head meta tags, the JSON-LD `Product` block, then `padding` bytes of
    script (the real page is megabytes after the JSON-LD: a client may stop reading there)."""
    currency = world.config.currency
    url = f"{origin}/items/{item.id}-{slug(item)}"
    title = html.escape(item.title)
    description = f"{item.title} - {condition_label(item, locale)}"
    price: int | float = int(item.price) if item.price == int(item.price) else float(item.price)
    product = {
        "@type": "Product",
        "name": item.title,
        "description": description,
        "image": f"{origin}/photos/{item.id}.jpg",
        "brand": {"@type": "Brand", "name": world.brands[item.brand_id]},
        "offers": {
            "@type": "Offer",
            "url": url,
            "priceCurrency": currency,
            "price": price,
            "availability": availability(item, state),
            "itemCondition": (
                "NewCondition" if item.status_id in _NEW_CONDITIONS else "UsedCondition"
            ),
        },
        "category": world.category_paths[item.category_id],
        "@context": "https://schema.org",
    }
    ld = json.dumps(product, ensure_ascii=False).replace("</", "<\\/")
    page = (
        f'<!DOCTYPE html><html lang="{locale}"><head><meta charSet="utf-8"/>'
        f"<title>{title} | Marketplace</title>"
        f'<meta name="description" content="{html.escape(description)}"/>'
        f'<meta name="iso-locale" content="{locale}"/>'
        f'<link rel="canonical" href="{url}"/>'
        f'<meta property="og:title" content="{title} | Marketplace"/>'
        f'<meta property="og:url" content="{url}"/>'
        f'<meta property="og:type" content="website"/></head><body>\n'
        f'<script type="application/ld+json">{ld}</script>\n'
    ).encode()
    return page + _filler(padding) + b"</body></html>"


@lru_cache(maxsize=4)
def _filler(size: int) -> bytes:
    """`size` bytes of one `<script>` element (a JSON blob, like the real page's app state),
    built once per size: pages are served often and can be megabytes."""
    if size <= 0:
        return b""
    head, tail = b'<script id="__NEXT_DATA__" type="application/json">{"blob":"', b'"}</script>'
    room = max(0, size - len(head) - len(tail))
    return head + (b"0123456789abcdef" * (room // 16 + 1))[:room] + tail


def drop_fields(item: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Remove a few optional fields, as real responses sometimes do."""
    for key in rng.sample(["favourite_count", "view_count", "photo", "photos", "user",
                           "total_item_price", "service_fee", "item_box"], 3):  # fmt: skip
        item.pop(key, None)
    return item
