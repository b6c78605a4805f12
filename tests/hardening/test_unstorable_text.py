"""Text that would break pages once stored never gets in (#21, item 3).

Lone surrogates are valid JSON escapes (`"\\ud800"`) but not Unicode: an import carrying them
was accepted with 201, after which the analysis page, its SVG graphs and the dashboard
answered 500 until the analysis was deleted. The import now refuses them (and NUL, which no
PostgreSQL text column holds) as every request model does, and text from the marketplace has
them replaced, so no stored value makes a page fail.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from api.analyses.imports import SCAN_CHUNK, unstorable_escape
from scrapers import parse_catalogue_json
from tests.api.helpers import assert_envelope, signed_in, wait_active
from tests.api.test_runs import URL, _stock
from tests.conftest import RunningService, ServiceClient
from tests.engine.fake_market import FakeMarket


async def _export(client: ServiceClient, market: FakeMarket) -> dict[str, Any]:
    _stock(market)
    started = await client.post("/api/monitoring/start", json={"url": URL, "interval_seconds": 60})
    monitor = started.json()
    await wait_active(client, monitor["id"])
    document: dict[str, Any] = (await client.get(f"/api/monitoring/{monitor['id']}/export")).json()
    return document


async def test_an_import_with_lone_surrogates_or_nul_is_refused_and_pages_keep_working(
    service: RunningService, market: FakeMarket
) -> None:
    async with service.client() as client:
        await signed_in(client)
        document = await _export(client, market)
        listings = document["listings"]
        assert isinstance(listings, list) and listings
        plants = {
            "lone high surrogate in a brand": ("listings", "brand", "Zara \ud800"),
            "lone low surrogate in a title": ("listings", "title", "\udfff jeans"),
            "NUL in the monitor's URL": ("monitor", "url", "https://www.vinted.fr/\x00catalog"),
        }
        for name, (section, field, text) in plants.items():
            planted = json.loads(json.dumps(document))
            target = planted[section][0] if section == "listings" else planted[section]
            target[field] = text
            raw = json.dumps(planted).encode()  # ensure_ascii: "\ud800" and "\u0000" escapes
            refused = await client.post(
                "/api/analysis/import-monitoring",
                content=raw,
                headers={"Content-Type": "application/json"},
            )
            assert_envelope(refused, 422, "invalid_export"), name
        assert (await client.get("/api/analyses")).json()["total"] == 0
        # A real astral character (an escaped surrogate *pair*) is text like any other.
        planted = json.loads(json.dumps(document))
        planted["listings"][0]["brand"] = "Zara 😀"
        accepted = await client.post(
            "/api/analysis/import-monitoring",
            content=json.dumps(planted).encode(),
            headers={"Content-Type": "application/json"},
        )
        assert accepted.status_code == 201, accepted.text
        analysis_id = accepted.json()["id"]
        for path in (f"/analyses/{analysis_id}", "/dashboard", f"/api/analyses/{analysis_id}"):
            assert (await client.get(path)).status_code == 200, path


def test_marketplace_text_with_lone_surrogates_is_stored_replaced() -> None:
    page = parse_catalogue_json(
        b'{"items": [{"id": 7, "title": "Jeans \\ud800", "brand_title": "\\udc00Levi\'s",'
        b' "price": "12.00", "url": "/items/7"}], "pagination": {"current_page": 1}}',
        origin="https://www.vinted.fr",
    )
    (listing,) = page.listings
    assert listing.title == "Jeans \ufffd" and listing.brand == "\ufffdLevi's"
    for text in (listing.title, listing.brand):
        assert text is not None
        text.encode("utf-8")  # storable and showable


@pytest.mark.parametrize("shift", range(0, 14))
def test_the_import_scan_finds_escapes_across_its_chunks(shift: int) -> None:
    """The import scans its spooled body in chunks (`api.analyses.imports.unstorable_escape`): an
    escape cut by a chunk's end is still found, a valid pair (an emoji) or an escaped
    backslash followed by `u` is still text."""
    pad = b'{"t": "' + b"a" * (SCAN_CHUNK - 8 - shift)
    for tail, found in (
        (b'\\ud800x"}', True),
        (b'\\u0000"}', True),
        (b'\\udfff"}', True),
        (b'\\ud83d\\ude00"}', False),
        (b'\\\\ud800"}', False),
        (b'\\\\\\ud800"}', True),
        (b'\\\\\\\\\\\\\\\\ud800"}', False),
    ):
        stream = io.BytesIO(pad + tail)
        assert (unstorable_escape(stream) is not None) is found, (shift, tail)
        assert stream.tell() == 0
