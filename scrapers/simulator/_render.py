"""The `legacy` wire profile: how the simulator reads its filters (`*_ids`) and writes its world
(JSON items, the detail API, both HTML catalogue layouts, the store-JSON item page)."""

from __future__ import annotations

import html
import json
import random
import unicodedata
from decimal import Decimal
from typing import Any

from ._world import FeedFilter, SimListing, World

_LOCALE_FORMATS = ("{:.2f} €", "€{:.2f}", "£{:.2f}", "{} zł")


def slug(item: SimListing) -> str:
    """The title as the item URL's slug, in ASCII ("Fjällräven" -> "fjallraven"): a path the
    client does not have to percent-encode, and a `Location` header that stays latin-1."""
    folded = unicodedata.normalize("NFKD", item.title).encode("ascii", "ignore").decode()
    return "-".join(folded.lower().replace("'", "").split())


def size_title(world: World, item: SimListing) -> str:
    """The size as the site writes it; empty in a category without sizes (bags, games)."""
    return "" if item.size_id is None else world.sizes[item.size_id]


def _ids(value: str | None) -> frozenset[int]:
    if not value:
        return frozenset()
    return frozenset(int(v) for v in value.split(",") if v.strip())


def filter_from_params(params: dict[str, str]) -> FeedFilter:
    """The legacy catalogue API's filters (comma-joined `*_ids`); `ValueError` (or decimal's
    `InvalidOperation`) on a value that is not a number (the app answers 400)."""

    def price(name: str) -> Decimal | None:
        value = params.get(name)
        return Decimal(value) if value else None

    return FeedFilter(
        catalog_ids=_ids(params.get("catalog_ids")),
        brand_ids=_ids(params.get("brand_ids")),
        size_ids=_ids(params.get("size_ids")),
        status_ids=_ids(params.get("status_ids")),
        price_from=price("price_from"),
        price_to=price("price_to"),
        search_text=params.get("search_text") or None,
    )


def money(amount: Decimal, currency: str) -> dict[str, str]:
    return {"amount": str(amount), "currency_code": currency}


def fee(price: Decimal) -> Decimal:
    return (Decimal("0.70") + price * Decimal("0.05")).quantize(Decimal("0.01"))


def catalogue_item(world: World, item: SimListing, t: float, origin: str) -> dict[str, Any]:
    currency = world.config.currency
    path = f"/items/{item.id}-{slug(item)}"
    photo_url = f"{origin}/photos/{item.id}.jpg"
    return {
        "id": item.id,
        "title": item.title,
        "price": money(item.price, currency),
        "is_visible": True,
        "brand_title": world.brands[item.brand_id],
        "path": path,
        "url": origin + path,
        "user": {"id": item.seller_id, "login": item.seller_login, "business": item.business},
        "promoted": False,
        "photo": {
            "id": item.id * 10,
            "url": photo_url,
            "is_main": True,
            "high_resolution": {"id": f"hr{item.id}", "timestamp": int(item.born)},
        },
        "favourite_count": item.favourites_at(t),
        "view_count": item.views_at(t),
        "service_fee": money(fee(item.price), currency),
        "total_item_price": money(item.price + fee(item.price), currency),
        "size_title": size_title(world, item),
        "status": world.conditions[item.status_id],
        "catalog_id": item.category_id,
        "item_box": {
            "first_line": world.brands[item.brand_id],
            "second_line": world.conditions[item.status_id],
            "item_id": item.id,
        },
    }


def item_detail(world: World, item: SimListing, t: float, origin: str) -> dict[str, Any]:
    state = item.state_at(t)
    data = catalogue_item(world, item, t, origin)
    data.pop("photo")
    data.update(
        {
            "description": f"{item.title}, worn a few times.",
            "catalog_id": item.category_id,
            "status_id": item.status_id,
            "price": str(item.price),
            "currency": world.config.currency,
            "total_item_price": str(item.price + fee(item.price)),
            "service_fee": str(fee(item.price)),
            "brand_dto": {"id": item.brand_id, "title": world.brands[item.brand_id]},
            "is_closed": state == "sold",
            "is_reserved": state == "reserved",
            "is_hidden": state == "deleted",
            "is_draft": False,
            "item_closing_action": "sold" if state == "sold" else None,
            "can_buy": state == "open",
            "photos": [
                {
                    "id": item.id * 10,
                    "url": f"{origin}/photos/{item.id}.jpg",
                    "is_main": True,
                    "high_resolution": {"timestamp": int(item.born)},
                }
            ],
        }
    )
    return data


def price_text(amount: Decimal, style: int) -> str:
    fmt = _LOCALE_FORMATS[style % len(_LOCALE_FORMATS)]
    if style % len(_LOCALE_FORMATS) == 0:
        return fmt.format(amount).replace(".", ",")
    if style % len(_LOCALE_FORMATS) == 3:
        whole, _, cents = f"{amount:,.2f}".partition(".")
        return whole.replace(",", "\u00a0") + f",{cents} zł"
    return fmt.format(amount)


def catalogue_html(
    world: World, items: list[SimListing], t: float, layout: str, broken: int | None = None
) -> str:
    """A catalogue page; layout "B" carries ids in test ids, "A" only in the links' hrefs.
    `broken` is the index of one card written without any id (a malformed card)."""
    cards = []
    for index, item in enumerate(items):
        style = 0 if layout == "B" else 1
        price = price_text(item.price, style)
        total = price_text(item.price + fee(item.price), style)
        brand = html.escape(world.brands[item.brand_id])
        size = size_title(world, item)
        cond = world.conditions[item.status_id]
        sized = f"size: {size}, " if size else ""
        subtitle = html.escape(f"{size} · {cond}" if size else cond)
        label = html.escape(
            f"{item.title}, brand: {world.brands[item.brand_id]}, condition: {cond}, {sized}"
            f"{price}, {total} includes Buyer Protection"
        )
        prefix = f"product-item-id-{item.id}" if layout == "B" else "feed-item"
        href = f"/items/{item.id}-{slug(item)}" if index != broken else "/items/not-an-id"
        link_id = f"{prefix}--overlay-link" if index != broken else "feed-item--overlay-link"
        cards.append(
            f'<div data-testid="grid-item"><div class="new-item-box__container" '
            f'data-testid="{prefix}">'
            f'<div class="image"><img data-testid="{prefix}--image--img" '
            f'src="/photos/{item.id}.jpg" alt="{html.escape(item.title)}"></div>'
            f'<a data-testid="{link_id}" href="{href}" title="{label}"></a>'
            f'<p data-testid="{prefix}--description-title">{brand}</p>'
            f'<p data-testid="{prefix}--description-subtitle">{subtitle}</p>'
            f'<p data-testid="{prefix}--price-text">{price}</p>'
            f'<button><span data-testid="favourite-count-text">{item.favourites_at(t)}</span>'
            f"</button></div></div>"
        )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Catalogue</title></head>"
        "<body><header><nav>Menu</nav></header><main><div class='feed-grid'>"
        + "".join(cards)
        + "</div></main><footer>Footer</footer></body></html>"
    )


def item_page(world: World, item: SimListing, t: float, origin: str) -> str:
    detail = item_detail(world, item, t, origin)
    store = json.dumps({"itemsStore": {"item": detail}}).replace("</", "<\\/")
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f'<meta property="og:title" content="{html.escape(item.title)}">'
        f'<meta property="og:price:amount" content="{item.price}">'
        f'<meta property="og:price:currency" content="{world.config.currency}">'
        f"<title>{html.escape(item.title)}</title></head><body><h1>{html.escape(item.title)}</h1>"
        f'<script type="application/json" data-js-react-on-rails-store="MainStore">{store}'
        "</script></body></html>"
    )


BLOCK_PAGE = (
    "<!doctype html><html><head><title>Access denied</title></head><body>"
    "<h1>Access denied</h1><p>Unusual traffic from your network.</p></body></html>"
)


def drop_fields(item: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Remove a few optional fields, as real responses sometimes do."""
    for key in rng.sample(["size_title", "brand_title", "favourite_count", "view_count",
                           "photo", "user", "total_item_price"], 3):  # fmt: skip
        item.pop(key, None)
    return item
