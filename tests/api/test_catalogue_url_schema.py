"""The catalogue URL pattern in the OpenAPI document states what the service takes (#21,
item 13): every URL the pattern admits passes the service's own checks (but a price_from above
its price_to, and DNS, which no schema can state), and what the service refuses for its shape
the pattern refuses too.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from api.catalogue_urls import refuse_unaccepted_site, url_pattern
from api.http.errors import BadRequest
from api.settings import Settings
from scrapers import InvalidCatalogueUrl, UrlRefused, parse_catalogue_url
from scrapers._ssrf import check_url_syntax

SIMULATOR = "http://127.0.0.1:8100"
CONFIGURED = Settings(market_origins=(SIMULATOR,), market_sites=("www.vinted.fr", "www.vinted.de"))
PATTERN = url_pattern(CONFIGURED)
HYPOTHESIS_SEED = 13  # seeded: the same examples every run


def _price_order_holds(url: str) -> bool:
    query = dict(parse_qsl(urlsplit(url).query))
    low, high = query.get("price_from"), query.get("price_to")
    return low is None or high is None or float(low) <= float(high)


@seed(HYPOTHESIS_SEED)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.from_regex(PATTERN, fullmatch=True))
def test_every_url_the_pattern_admits_is_taken(url: str) -> None:
    if not _price_order_holds(url):
        return
    refuse_unaccepted_site(url, CONFIGURED, doing="monitored")
    check_url_syntax(url, CONFIGURED.market_origins)
    parse_catalogue_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "0",
        "ftp://www.vinted.fr/catalog",
        "http://www.vinted.fr/catalog",  # marketplace hosts: https only
        "https://evil.example/catalog",
        "https://user@www.vinted.fr/catalog",
        "https://www.vinted.fr/items/123",
        "https://www.vinted.fr/catalog?brand_ids[]=abc",
        "https://www.vinted.fr/catalog?order=cheapest",
        "https://www.vinted.it/catalog",  # a site this configuration does not follow
    ],
)
def test_what_the_service_refuses_for_its_shape_the_pattern_refuses(url: str) -> None:
    assert re.fullmatch(PATTERN, url) is None
    with pytest.raises((BadRequest, UrlRefused, InvalidCatalogueUrl)):
        refuse_unaccepted_site(url, CONFIGURED, doing="monitored")
        check_url_syntax(url, CONFIGURED.market_origins)
        parse_catalogue_url(url)


def test_a_copied_catalogue_url_matches() -> None:
    for url in (
        "https://www.vinted.fr/catalog?catalog[]=1904&brand_ids[]=53&order=newest_first",
        "https://www.vinted.de/catalog/1904-jeans?size_ids[]=207&price_from=5&price_to=30",
        f"{SIMULATOR}/catalog?search_text=levis+501&currency=EUR",
    ):
        assert re.fullmatch(PATTERN, url), url
