from __future__ import annotations

from decimal import Decimal

import pytest

from scrapers import InvalidCatalogueUrl, parse_catalogue_url

BASE = "https://www.vinted.fr/catalog"


def test_example_url_from_contract() -> None:
    q = parse_catalogue_url(
        f"{BASE}?catalog[]=1904&brand_ids[]=53&size_ids[]=206&status_ids[]=6"
        "&price_from=5&price_to=40&search_text=jean&order=newest_first"
    )
    assert q.origin == "https://www.vinted.fr"
    assert (q.catalog_ids, q.brand_ids, q.size_ids, q.status_ids) == ((1904,), (53,), (206,), (6,))
    assert (q.price_from, q.price_to) == (Decimal(5), Decimal(40))
    assert q.search_text == "jean" and q.order == "newest_first"
    assert dict(q.api_params(2, 96)) == {
        "page": "2", "per_page": "96", "catalog_ids": "1904", "brand_ids": "53",
        "size_ids": "206", "status_ids": "6", "price_from": "5", "price_to": "40",
        "search_text": "jean", "order": "newest_first",
    }  # fmt: skip


@pytest.mark.parametrize(
    "query",
    [
        "catalog[]=1&catalog[]=2&brand_ids[]=9&brand_ids[]=3",
        "catalog=1&catalog=2&brand_ids=9&brand_ids=3",
        "catalog=1,2&brand_ids=3,9",
        "catalog[0]=2&catalog[1]=1&brand_ids[]=3,9&brand_ids=9",
        "catalog_ids=2,1&brand_ids[]=9&brand_ids[]=3&page=4&time=123",
    ],
)
def test_repeated_key_forms_normalise_alike(query: str) -> None:
    q = parse_catalogue_url(f"{BASE}?{query}")
    assert q.catalog_ids == (1, 2) and q.brand_ids == (3, 9)
    assert dict(q.api_params())["catalog_ids"] == "1,2"
    assert q.extra == ()


def test_unknown_params_pass_through_and_path_category() -> None:
    q = parse_catalogue_url(f"{BASE}/1904-women-jeans?disposal[]=1&foo=bar&currency=eur")
    assert q.catalog_ids == (1904,)
    assert q.extra == (("disposal[]", "1"), ("foo", "bar"))
    assert q.currency == "EUR"
    params = q.api_params()
    assert ("foo", "bar") in params and ("disposal[]", "1") in params
    assert "catalog[]=1904" in q.catalogue_url(page=2) and q.catalogue_url(2).endswith("page=2")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (f"{BASE}?catalog[]=abc", "numeric ids"),
        (f"{BASE}?brand_ids=1,-2", "numeric ids"),
        (f"{BASE}?price_from=cheap", "not a number"),
        (f"{BASE}?price_from=-1", "out of range"),
        (f"{BASE}?price_from=50&price_to=10", "above price_to"),
        (f"{BASE}?order=cheapest", "unknown order"),
        (f"{BASE}?currency=euro", "3-letter"),
        ("https://www.vinted.fr/member/12", "not /catalog"),
        ("ftp://www.vinted.fr/catalog", "http(s)"),
    ],
)
def test_invalid_urls(url: str, reason: str) -> None:
    with pytest.raises(InvalidCatalogueUrl, match="invalid catalogue URL") as info:
        parse_catalogue_url(url)
    assert reason in info.value.reason


def test_price_with_comma_and_search_text_normalised() -> None:
    q = parse_catalogue_url(f"{BASE}?price_from=4,5&search_text=%20blue%20%20jeans%20")
    assert q.price_from == Decimal("4.5") and q.search_text == "blue jeans"


@pytest.mark.parametrize("part", ["²", "١٢", "12a"])
def test_ids_that_only_look_like_digits_are_refused(part: str) -> None:
    with pytest.raises(InvalidCatalogueUrl):
        parse_catalogue_url(f"https://www.vinted.fr/catalog?catalog[]={part}")
