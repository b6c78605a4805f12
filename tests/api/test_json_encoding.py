"""The app's JSON encoder (orjson) writes what Quart's default encoder wrote, for the values
handlers hand it."""

from __future__ import annotations

import dataclasses
import json
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import orjson
from pydantic import BaseModel
from quart import Quart
from quart.json.provider import DefaultJSONProvider
from quart_schema import QuartSchema

from api.analyses.cache import AnalysisParts
from api.http.json_encoding import OrjsonProvider, api_json
from api.monitors.actions import listing_out
from api.monitors.schemas import ListingsPage
from api.runs.actions import run_fields, run_out
from store import ListingRecord, RunRecord


class Model(BaseModel):
    at: datetime
    price: Decimal


@dataclasses.dataclass(frozen=True)
class Record:
    id: str
    n: int


def _providers() -> tuple[DefaultJSONProvider, OrjsonProvider]:
    app = Quart(__name__)
    QuartSchema(app)
    default = app.json
    assert isinstance(default, DefaultJSONProvider)
    return default, OrjsonProvider(app, fallback=default)


def test_the_same_json_as_the_default_encoder() -> None:
    default, fast = _providers()
    at = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    value = {
        "b": [1, 2.5, None, True, "é"],
        "a": {"decimal": Decimal("12.50"), "when": at, "id": uuid.UUID(int=7)},
        "model": Model(at=at, price=Decimal("3.10")),
        "record": Record("x", 1),
        7: "int key",
    }
    # Keys keep their order (the default sorted them): compare parsed values.
    assert orjson.loads(fast.dumps(value)) == json.loads(default.dumps(value, sort_keys=False))
    assert orjson.loads(fast.dumps(value))["a"]["when"] == "2026-11-26T09:00:00Z"


def test_not_a_number_is_null_not_invalid_json() -> None:
    _, fast = _providers()
    assert fast.dumps({"x": float("nan")}) == '{"x":null}'


def test_indent_is_honoured_for_documents_meant_to_be_read() -> None:
    _, fast = _providers()
    assert fast.dumps({"a": 1}, indent=2) == '{\n  "a": 1\n}'


def test_a_listings_page_is_written_as_its_model_would_be() -> None:
    """`list_listings` writes its answer from the records with `api_json`, not through
    `ListingsPage`: the two must agree, value for value."""
    at = datetime(2026, 11, 26, 9, 0, 0, 123456, tzinfo=UTC)
    whole = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    listings = [
        ListingRecord(
            item_id=1, title="Jean 501 été \"vintage\"", brand="Levi's",
            size="W32", condition="Très bon état", category_id=1904,
            price=Decimal("12.50"), currency="EUR", favourites=3, views=None, seller_id=9,
            url="https://example.com/items/1", photo_url=None, listed_at=None,
            first_seen_at=at, last_seen_at=whole, state="sold", state_changed_at=at,
            in_feed=False, total_price=Decimal("13.33"), service_fee=Decimal("0.83"),
            state_evidence="absence", absent_polls=3,
        ),
        ListingRecord(
            item_id=2, title=None, brand=None, size=None, condition=None, category_id=None,
            price=Decimal("1E+2"), currency=None, favourites=None, views=None,
            seller_id=None, url=None, photo_url=None, listed_at=whole, first_seen_at=whole,
            last_seen_at=whole, state="open", state_changed_at=whole, in_feed=True,
        ),
    ]  # fmt: skip
    body = {
        "listings": [listing_out(listing) for listing in listings],
        "state": "all", "page": 1, "page_size": 50, "total": 2, "pages": 1,
    }  # fmt: skip
    modelled = ListingsPage.model_validate(body).model_dump(mode="json")
    assert orjson.loads(api_json(body)) == modelled
    assert modelled["listings"][0]["likely"] is True  # the derived field is there


def test_runs_are_written_as_their_model_would_be() -> None:
    """The dashboard writes its recent runs with `run_fields` and `api_json`."""
    at = datetime(2026, 11, 26, 9, 0, 0, 5, tzinfo=UTC)
    runs = [
        RunRecord(
            id="run_1", workspace_id="wsp_1", label="jeans", source="url",
            url="https://www.vinted.fr/catalog?catalog[]=1904", monitor_id=None, max_items=200,
            state="succeeded", replay_of=None, created_at=at, started_at=at, finished_at=at,
            progress=1.0, items=200, error=None, analysis_id="ana_1",
        ),
        RunRecord(
            id="run_2", workspace_id="wsp_1", label=None, source="monitor", url=None,
            monitor_id="mon_1", max_items=0, state="failed", replay_of="run_1",
            created_at=at, started_at=None, finished_at=None, progress=0.25, items=3,
            error="boom é \"quoted\"", analysis_id=None, include_likely_sales=True,
        ),
    ]  # fmt: skip
    for run in runs:
        assert orjson.loads(api_json(run_fields(run))) == run_out(run).model_dump(mode="json")


def test_a_stored_document_with_not_a_number_is_answered_as_null() -> None:
    """Analyses were stored by Python's encoder, which writes NaN (not JSON)."""
    parts = AnalysisParts.parse(json.dumps({"niches": [{"score": float("nan")}], "graphs": {}}), 10)
    result = orjson.loads(parts.result)
    assert result["niches"] == [{"score": None}] and "graphs" not in result
    assert result["sales_basis"] == "confirmed"  # derived: stored before the sales basis
    assert orjson.loads(parts.top_niches) == [{"score": None}]
