"""Wire profiles against the real samples of both generations, and their request building."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import parse_qsl, urlsplit

import pytest

from scrapers import (
    PROFILES,
    CataloguePage,
    ItemState,
    Listing,
    ParseError,
    SiteMap,
    SuspiciousAnswer,
    UrlRefused,
    canonical_condition,
    check_catalogue_url,
    parse_catalogue_url,
    parse_item_page_jsonld,
    product_block_read,
)
from scrapers._believable import check_categories_apart, check_filters
from scrapers._parse_svc import split_second_line

from .test_parsers import FIXTURES

TODAY = FIXTURES / "2026-09"
SITE_IT = SiteMap().site("https://www.vinted.it")


def test_todays_catalogue_sample_parses_as_is() -> None:
    content = (TODAY / "svc_catalogue_items_sample.json").read_bytes()
    page = PROFILES["2026-09"].parse_catalogue(content, SITE_IT)
    assert page.problems == ()
    assert page.total_entries == 960 and page.total_pages == 192
    assert page.market_time == datetime.fromtimestamp(1789808579, UTC)
    first, promoted, third = page.listings
    assert first.id == 10051317969 and first.title == "Brassière de sport Nike"
    assert first.brand == "Nike Air" and first.size == "L"
    assert first.condition == "New without tags"
    assert first.condition_raw == "Nuovo senza cartellino"
    assert first.url == "https://www.vinted.it/items/10051317969-brassiere-de-sport-nike"
    assert first.price == Decimal("6.00") and first.currency == "EUR"
    assert first.total_price == Decimal("7.00") and first.service_fee == Decimal("1.00")
    assert first.listed_at is None and "listed_at" in first.missing  # never invented
    assert first.category_id is None  # items carry none: the query says, if anything
    assert first.promoted is False
    assert promoted.promoted is True and promoted.condition == "Good"  # "Buone"
    assert promoted.size == "41"
    assert third.condition == "Very good" and third.size == "36.5"  # "Ottime"
    assert first.seller_login == "seller_a" and first.seller_business is False


def test_legacy_samples_still_parse_in_the_legacy_profile() -> None:
    legacy = PROFILES["legacy"]
    site = SiteMap().site("https://www.vinted.fr")
    page = legacy.parse_catalogue((FIXTURES / "catalogue_items_sample.json").read_bytes(), site)
    (listing,) = page.listings
    assert listing.condition == "Very good" and listing.condition_raw == "Very Good"
    detail = legacy.parse_detail((FIXTURES / "item_detail_sample.json").read_bytes(), site)
    assert detail.state is ItemState.OPEN and detail.evidence == "detail_api"


def test_todays_item_page_sample_gives_state_and_category() -> None:
    content = (TODAY / "item_page_sample.html").read_bytes()
    assert product_block_read(content)
    detail = PROFILES["2026-09"].parse_item_page(content, SITE_IT, 10051317969)
    assert detail.state is ItemState.OPEN and detail.evidence == "item_page"
    assert detail.listing.brand == "Nike Air"
    assert detail.listing.category_name == "Donna Reggiseni sportivi"
    assert detail.listing.price == Decimal("6") and detail.listing.currency == "EUR"


def _page(availability: str, *, graph: bool = False, before: str = "") -> bytes:
    product = {"@type": "Product", "name": "x", "offers": {"availability": availability}}
    data: object = {"@graph": [{"@type": "BreadcrumbList"}, product]} if graph else product
    return (
        f'<html><head>{before}</head><body><script type="application/ld+json">'
        f"{json.dumps(data)}</script><script>{'x' * 5000}</script></body></html>"
    ).encode()


@pytest.mark.parametrize(
    ("availability", "state"),
    [
        ("InStock", ItemState.OPEN),
        ("https://schema.org/InStock", ItemState.OPEN),
        ("SoldOut", ItemState.SOLD),
        ("http://schema.org/SoldOut", ItemState.SOLD),
        ("https://schema.org/OutOfStock", ItemState.SOLD),
        ("Reserved", ItemState.RESERVED),
    ],
)
def test_availability_bare_or_as_schema_org_urls(availability: str, state: ItemState) -> None:
    detail = parse_item_page_jsonld(_page(availability), item_id=7)
    assert detail.state is state and detail.id == 7


def test_unknown_availability_or_no_block_is_never_a_state() -> None:
    with pytest.raises(ParseError):
        parse_item_page_jsonld(_page("SomethingNew"), item_id=7)
    with pytest.raises(ParseError):
        parse_item_page_jsonld(b"<html><body>no json-ld</body></html>", item_id=7)
    # A non-Product block first, then a Product inside @graph.
    other = '<script type="application/ld+json">{"@type": "Organization"}</script>'
    assert parse_item_page_jsonld(_page("SoldOut", graph=True, before=other), item_id=7).state is (
        ItemState.SOLD
    )


def test_reading_stops_once_the_product_block_has_arrived() -> None:
    page = _page("InStock")
    cut = page.index(b"</script>") + len(b"</script>")
    assert not product_block_read(page[: cut - 3])  # the block is still arriving
    assert product_block_read(page[:cut])  # the rest (scripts) is not needed


@pytest.mark.parametrize(
    ("label", "canonical"),
    [
        ("New with tags", "New with tags"),
        ("neuf avec étiquette", "New with tags"),
        ("Neu ohne Etikett", "New without tags"),
        ("Nuovo senza cartellino", "New without tags"),
        ("Nuevo sin etiquetas", "New without tags"),
        ("Très bon état", "Very good"),
        ("OTTIME", "Very good"),
        ("Zeer goed", "Very good"),
        ("Bardzo dobry", "Very good"),
        ("Bon état", "Good"),
        ("Gut", "Good"),
        ("Bueno", "Good"),
        ("Discrete", "Satisfactory"),
        ("Redelijk", "Satisfactory"),
        ("Zadowalający", "Satisfactory"),
    ],
)
def test_conditions_in_every_listed_language(label: str, canonical: str) -> None:
    assert canonical_condition(label) == canonical


def test_second_line_split_and_unknown_conditions() -> None:
    assert split_second_line("L · Nuovo senza cartellino") == ("L", "New without tags",
                                                              "Nuovo senza cartellino")  # fmt: skip
    assert split_second_line("W32 · L34 · Gut") == ("W32 · L34", "Good", "Gut")
    assert split_second_line("Buone") == (None, "Good", "Buone")  # a lone condition
    assert split_second_line("XL") == ("XL", None, None)  # a lone size
    # An unknown label is kept raw, with no canonical condition: it never becomes a niche.
    assert split_second_line("M · Wie neu") == ("M", None, "Wie neu")
    assert split_second_line(None) == (None, None, None)


def test_todays_request_never_carries_a_legacy_filter_name() -> None:
    query = parse_catalogue_url(
        "https://www.vinted.co.uk/catalog?catalog[]=1904&brand_ids[]=53&brand_ids[]=54"
        "&size_ids[]=206&status_ids=6&color_ids=1&price_from=5&search_text=jean&foo=bar"
    )
    site = SiteMap().site(query.origin)
    call = PROFILES["2026-09"].catalogue_call(query, site, 2, 96)
    parts = urlsplit(call.url)
    assert f"{parts.scheme}://{parts.netloc}" == "https://api.vinted.co.uk"
    assert parts.path == "/svc-catalogue/items"
    params = dict(parse_qsl(parts.query))
    assert params["attribute_ids[catalog]"] == "1904"
    assert params["attribute_ids[brand]"] == "53,54"
    assert params["attribute_ids[size]"] == "206"
    assert params["attribute_ids[status]"] == "6"
    assert params["attribute_ids[color]"] == "1"
    assert params["page"] == "2" and params["foo"] == "bar" and params["search_text"] == "jean"
    assert not any(key.endswith("_ids") or key.startswith("catalog") for key in params)
    headers = dict(call.headers)
    assert headers["Locale"] == "en-GB" and headers["Platform"] == "web"
    assert headers["X-Next-App"] == "marketplace-web"
    assert headers["Referer"] == "https://www.vinted.co.uk/"
    legacy = PROFILES["legacy"].catalogue_call(query, site, 1, 96)
    assert legacy.url.startswith("https://www.vinted.co.uk/api/v2/catalog/items?")


def test_site_map_pairs_and_locales() -> None:
    sites = SiteMap.parse("http://127.0.0.1:8100=http://127.0.0.1:8101")
    assert sites.site("http://127.0.0.1:8100").api_origin == "http://127.0.0.1:8101"
    assert sites.site("http://127.0.0.1:9999").api_origin == "http://127.0.0.1:9999"
    assert sites.site("https://www.vinted.fr").locale == "fr-FR"
    assert sites.site("https://www.vinted.com.au").locale == "en-AU"
    assert sites.site("https://www.vinted.com").locale == "en-US"
    for bad in ("http://a:1", "ftp://a=http://b", "http://a=http://b/path"):
        with pytest.raises(ValueError):
            SiteMap.parse(bad)


def test_detail_refusal_is_json_code_not_a_block_page() -> None:
    profile = PROFILES["2026-09"]
    assert profile.detail_refused(403, b'{"code": 106, "message_code": "access_denied"}')
    assert not profile.detail_refused(403, b"<html><h1>Access denied</h1></html>")
    assert not profile.detail_refused(429, b'{"code": 106}')
    assert not PROFILES["legacy"].detail_refused(403, b'{"code": 106}')


async def _allowed(url: str) -> bool:
    async def public(host: str, port: int) -> list[str]:
        return ["93.184.216.34"]

    try:
        await check_catalogue_url(url, resolver=public)
    except UrlRefused:
        return False
    return True


async def test_api_hosts_and_every_listed_tld_are_allowlisted() -> None:
    for host in ("www.vinted.ee", "api.vinted.ee", "www.vinted.com.au", "api.vinted.si"):
        assert await _allowed(f"https://{host}/catalog"), host
    for host in ("api.vinted.example", "api2.vinted.fr", "www.vinted.fr.evil.com"):
        assert not await _allowed(f"https://{host}/catalog"), host
    assert not await _allowed("http://api.vinted.fr/catalog")  # https only


def _listings(brands: list[str], condition: str = "Good") -> CataloguePage:
    return CataloguePage(
        listings=tuple(
            Listing(id=i + 1, brand=b, condition=condition) for i, b in enumerate(brands)
        )
    )


def test_pages_that_ignore_their_filters_are_refused() -> None:
    one_brand = parse_catalogue_url("https://www.vinted.fr/catalog?brand_ids[]=53")
    check_filters(one_brand, _listings(["Levi's"] * 8 + ["Levi's Vintage"] * 4))  # believable
    with pytest.raises(SuspiciousAnswer) as caught:
        check_filters(one_brand, _listings([f"brand {i}" for i in range(12)]))
    assert caught.value.kind == "filters_ignored"
    check_filters(one_brand, _listings([f"brand {i}" for i in range(9)]))  # too few to judge
    new_only = parse_catalogue_url("https://www.vinted.fr/catalog?status_ids[]=6")
    check_filters(new_only, _listings(["x"] * 12, "New with tags"))
    with pytest.raises(SuspiciousAnswer):
        check_filters(new_only, _listings(["x"] * 12, "Good"))


def test_category_feeds_that_are_one_unfiltered_feed_are_refused() -> None:
    def feed(ids: range) -> CataloguePage:
        return CataloguePage(listings=tuple(Listing(id=i) for i in ids))

    check_categories_apart([feed(range(0, 96)), feed(range(100, 196))])  # disjoint: fine
    # A parent category and its child: the child's window is a small part of the parent's.
    check_categories_apart([feed(range(0, 96)), feed(range(0, 96, 8))])
    with pytest.raises(SuspiciousAnswer):  # both answered the same unfiltered feed
        check_categories_apart([feed(range(0, 96)), feed(range(2, 96))])
