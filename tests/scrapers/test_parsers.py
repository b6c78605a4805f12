from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from scrapers import (
    ItemState,
    ParseError,
    parse_catalogue_html,
    parse_catalogue_json,
    parse_item_detail,
    parse_item_page,
    parse_price,
)
from scrapers.simulator import FeedFilter, SimulatorConfig, World
from scrapers.simulator import _render as render

# The marketplace's real captures live beside the repository (`../shared/fixtures`), or where
# NICHESCOPE_MARKET_FIXTURES says.
FIXTURES = Path(
    os.environ.get("NICHESCOPE_MARKET_FIXTURES")
    or Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "marketplace"
)


def test_real_catalogue_sample_parses_as_is() -> None:
    page = parse_catalogue_json((FIXTURES / "catalogue_items_sample.json").read_bytes())
    assert page.problems == ()
    (listing,) = page.listings
    assert listing.id == 6854891835  # "id" is the string "item id": item_box.item_id is used
    assert listing.title == "a game"
    assert listing.price == Decimal("3.0") and listing.currency == "EUR"
    assert listing.total_price == Decimal("3.85")
    assert listing.brand == "NO LABEL"
    assert listing.favourites == 4 and listing.views == 0
    assert listing.size is None and "size" in listing.missing  # "" is missing, not a size
    assert listing.seller_id is None and "seller_id" in listing.missing  # "user id" string
    assert listing.seller_login == "username" and listing.seller_business is False
    assert listing.listed_at == datetime.fromtimestamp(1696452426, UTC)
    assert listing.photo_url == "https://www.fakeurl.com/a.jpg"


def test_real_detail_sample_parses_as_is() -> None:
    detail = parse_item_detail((FIXTURES / "item_detail_sample.json").read_bytes())
    assert detail.id == 6854891835
    assert detail.state is ItemState.OPEN
    assert detail.listing.price == Decimal("3.0") and detail.listing.currency == "USD"
    assert detail.listing.category_id == 4881
    assert detail.listing.brand == "Brand title"
    assert detail.listing.seller_id == 281750880
    assert detail.listing.listed_at == datetime.fromtimestamp(1754962318, UTC)
    assert detail.description == "No box"


@pytest.mark.parametrize(
    ("text", "amount", "currency"),
    [
        ("12,00 €", "12.00", "EUR"),
        ("€12.00", "12.00", "EUR"),
        ("£9.50", "9.50", "GBP"),
        ("1 234,56 zł", "1234.56", "PLN"),
        ("1\u00a0234,56\u00a0zł", "1234.56", "PLN"),
        ("1\u202f234,56 zł", "1234.56", "PLN"),
        ("1.234,56 €", "1234.56", "EUR"),
        ("$1,234.50", "1234.50", "USD"),
        ("12 €", "12", "EUR"),
        ("7.5 EUR", "7.5", "EUR"),
    ],
)
def test_locale_prices(text: str, amount: str, currency: str) -> None:
    assert parse_price(text) == (Decimal(amount), currency)


@pytest.mark.parametrize("text", ["", "free", "€"])
def test_bad_prices_raise(text: str) -> None:
    with pytest.raises(ValueError):
        parse_price(text)


def test_bad_item_is_skipped_and_recorded() -> None:
    good = {"id": "17", "title": "ok", "price": "5.5", "currency": "EUR"}
    doc = {"items": [good, {"title": "no id"}, "not an object", {"id": 18, "price": {}}]}
    page = parse_catalogue_json(json.dumps(doc))
    assert [item.id for item in page.listings] == [17, 18]
    assert page.listings[0].price == Decimal("5.5")
    assert "price" in page.listings[1].missing
    assert len(page.problems) == 2
    assert "item 1" in page.problems[0] and "item 2" in page.problems[1]


def test_ids_and_prices_in_every_shape() -> None:
    doc = {"items": [
        {"id": 1, "price": {"amount": "3.0", "currency_code": "EUR"}},
        {"id": "2", "price": "4,50 €"},
        {"id": 3.0, "price": 7},
        {"path": "/items/4-shirt", "price": "€8.00"},
    ], "pagination": {"current_page": "2", "total_pages": 9, "total_entries": "800"}}  # fmt: skip
    page = parse_catalogue_json(doc)
    assert [i.id for i in page.listings] == [1, 2, 3, 4]
    assert [i.price for i in page.listings] == [Decimal("3.0"), Decimal("4.50"), 7, 8]
    assert page.listings[1].currency == "EUR"
    assert (page.page, page.total_pages, page.total_entries) == (2, 9, 800)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "not JSON"),
        (b'{"items": [', "not JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"code": 0}', "no `items` list"),
    ],
)
def test_malformed_catalogue_raises_clear_error(data: bytes, message: str) -> None:
    with pytest.raises(ParseError, match="catalogue JSON") as info:
        parse_catalogue_json(data)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("flags", "state"),
    [
        ({"item_closing_action": "sold"}, ItemState.SOLD),
        ({"is_closed": True}, ItemState.SOLD),
        ({"is_closed": True, "is_reserved": True}, ItemState.SOLD),
        ({"is_reserved": True}, ItemState.RESERVED),
        ({"is_hidden": True}, ItemState.DELETED),
        ({"is_draft": True}, ItemState.DELETED),
        ({"is_closed": False, "is_reserved": False, "is_hidden": False}, ItemState.OPEN),
        ({}, ItemState.OPEN),
    ],
)
def test_detail_state_table(flags: dict[str, object], state: ItemState) -> None:
    assert parse_item_detail({"item": {"id": 5, **flags}}).state is state


@pytest.mark.parametrize("data", [b"", b"{}", b'{"item": null}', b'{"item": {"title": "x"}}'])
def test_malformed_detail_raises(data: bytes) -> None:
    with pytest.raises(ParseError, match="item detail"):
        parse_item_detail(data)


LAYOUT_B_CARD = """
<div data-testid="grid-item"><div data-testid="product-item-id-4242">
<img data-testid="product-item-id-4242--image--img" src="https://img.example/1.jpg">
<a data-testid="product-item-id-4242--overlay-link" href="/items/4242-blue-jeans"
   title="Blue jeans, brand: Levi's, condition: Very good, size: M, 12,00 €, 13,35 € includes Buyer Protection"></a>
<p data-testid="product-item-id-4242--description-title">Levi's</p>
<p data-testid="product-item-id-4242--description-subtitle">M · Very good</p>
<p data-testid="product-item-id-4242--price-text">12,00&nbsp;€</p>
<span data-testid="favourite-count-text">7</span></div></div>
"""  # noqa: E501

LAYOUT_A_CARD = """
<div data-testid="grid-item"><div data-testid="feed-item">
<img data-testid="feed-item--image--img" src="/p/9.jpg">
<a data-testid="feed-item--overlay-link" href="/items/99-coat"
   title="Warm coat, brand: Zara, condition: Good, size: L, £9.50, £10.20 includes Buyer Protection"></a>
<p data-testid="feed-item--description-title">Zara</p>
<p data-testid="feed-item--description-subtitle">L · Good</p>
<p data-testid="feed-item--price-text">£9.50</p>
<span data-testid="favourite-count-text">1</span></div></div>
"""  # noqa: E501


def test_html_layout_b() -> None:
    page = parse_catalogue_html(f"<html><body>{LAYOUT_B_CARD}</body></html>", origin="https://o")
    (card,) = page.listings
    assert card.id == 4242 and card.title == "Blue jeans"
    assert (card.brand, card.size, card.condition) == ("Levi's", "M", "Very good")
    assert card.price == Decimal("12.00") and card.currency == "EUR"
    assert card.total_price == Decimal("13.35")
    assert card.favourites == 7
    assert card.url == "https://o/items/4242-blue-jeans"
    assert card.photo_url == "https://img.example/1.jpg"


def test_html_layout_a_takes_id_from_href() -> None:
    page = parse_catalogue_html(f"<html><body>{LAYOUT_A_CARD}{LAYOUT_B_CARD}</body></html>")
    assert [c.id for c in page.listings] == [99, 4242]
    coat = page.listings[0]
    assert coat.price == Decimal("9.50") and coat.currency == "GBP"
    assert coat.total_price == Decimal("10.20")
    assert (coat.size, coat.condition, coat.brand) == ("L", "Good", "Zara")


def test_html_broken_card_is_isolated() -> None:
    broken = LAYOUT_A_CARD.replace("/items/99-coat", "/items/coat")
    page = parse_catalogue_html(f"<html><body>{broken}{LAYOUT_B_CARD}</body></html>")
    assert [c.id for c in page.listings] == [4242]
    assert len(page.problems) == 1 and "card 0" in page.problems[0]


@pytest.mark.parametrize("text", ["", "<html><body><h1>Access denied</h1></body></html>"])
def test_html_without_cards_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="catalogue HTML"):
        parse_catalogue_html(text)


@pytest.mark.parametrize("layout", ["A", "B"])
def test_simulator_pages_round_trip(layout: str) -> None:
    world = World(SimulatorConfig(seed=3, n_listings=200, arrivals_per_day=0))
    t = world.config.start
    items = world.live(t, FeedFilter())[:96]
    assert len(items) > 50
    page = parse_catalogue_html(render.catalogue_html(world, items, t, layout, broken=5))
    assert len(page.listings) == len(items) - 1 and len(page.problems) == 1
    expected = [i for n, i in enumerate(items) if n != 5]
    assert [c.id for c in page.listings] == [i.id for i in expected]
    assert [c.price for c in page.listings] == [i.price for i in expected]
    assert [c.brand for c in page.listings] == [world.brands[i.brand_id] for i in expected]


def test_item_page_main_store_and_next_data() -> None:
    world = World(SimulatorConfig(seed=3, n_listings=50, arrivals_per_day=0))
    item = world.listings[-1]
    html = render.item_page(world, item, world.config.start, "http://o")
    detail = parse_item_page(html)
    assert detail.id == item.id and detail.state is ItemState.OPEN
    assert detail.listing.price == item.price
    next_data = (
        '<html><head><meta property="og:title" content="Shoes">'
        '<meta property="og:price:amount" content="19.90">'
        '<meta property="og:price:currency" content="EUR"></head><body>'
        '<script id="__NEXT_DATA__" type="application/json">'
        '{"props": {"pageProps": {"item": {"id": "77", "is_reserved": true}}}}</script>'
        "</body></html>"
    )
    detail = parse_item_page(next_data)
    assert detail.id == 77 and detail.state is ItemState.RESERVED
    assert detail.listing.title == "Shoes" and detail.listing.price == Decimal("19.90")
    assert "title" not in detail.listing.missing


def test_item_page_without_state_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="no embedded item state"):
        parse_item_page('<html><head><meta property="og:title" content="x"></head></html>')
