"""`AnalysisInput.from_export`: round trip with `from_records`, and clear errors."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest
from jsonschema import Draft202012Validator, FormatChecker
from pydantic import BaseModel, ValidationError

from api.monitors.export import EXPORT_SCHEMA
from engine.analysis import EXPORT_FORMAT, EXPORT_VERSION, AnalysisInput, InvalidExport, analyse
from engine.analysis._columns import EVENT_KINDS, STATES
from engine.analysis._flow import MAX_FLOW_DAYS
from engine.analysis.export_format import (
    ARRAY_KEYS,
    DOCUMENT_KEYS,
    HEAD_KEYS,
    READABLE_VERSIONS,
    SCHEMA_TITLE,
    EventKind,
    ExportEvent,
    ExportEventV1,
    ExportListing,
    ExportListingV1,
    ExportMonitor,
    ExportPoll,
    MonitorExport,
    State,
    export_head,
    export_json_schema,
)
from engine.runs._analyser import analyse_export
from store import ListingEventRecord, ListingRecord, MonitorRecord, PollRecord

from .factory import NOW, V2_LISTING_FIELDS, History, export_document


def _history() -> History:
    h = History()
    for i in range(12):
        h.listing(
            brand="Nike" if i % 2 else "Zara",
            price=f"{10 + i}.50",
            favourites=i,
            listed_days_ago=25 if i % 3 else None,
            seen_days_ago=20,
            sold_days_ago=3.0 + i if i % 4 == 0 else None,
            deleted_days_ago=5.0 if i == 5 else None,
            reserved_days_ago=1.0 if i == 7 else None,
        )
    return h


def test_export_round_trip_equals_records() -> None:
    h = _history()
    document = export_document(h)
    jsonschema.validate(document, EXPORT_SCHEMA)  # the test document is a real export
    from_records = AnalysisInput.from_records(h.listings, h.events, now=NOW)
    from_export = AnalysisInput.from_export(document)
    assert from_export == from_records
    assert AnalysisInput.from_export(json.dumps(document).encode()) == from_records
    a, b = analyse(from_records, generated_at=NOW), analyse(from_export, generated_at=NOW)
    assert {**a.to_json(), "source": None} == {**b.to_json(), "source": None}
    assert b.source == "import"


def test_version_1_still_imports_its_sales_as_confirmed() -> None:
    h = _history()
    h.listing(seen_days_ago=10, sold_days_ago=2, sold_by="absence")
    v1, v2 = export_document(h, version=1), export_document(h)
    assert "evidence" not in v1["events"][0] and v2["events"][-1]["evidence"] == "absence"
    old, new = AnalysisInput.from_export(v1), AnalysisInput.from_export(v2)
    assert old.listings.likely is not None and not old.listings.likely.any()
    assert new.listings.likely is not None and new.listings.likely.sum() == 1
    assert new == AnalysisInput.from_records(h.listings, h.events, now=NOW)
    counts = analyse(old, generated_at=NOW).counts
    assert counts["sold_likely"] == 0 and counts["sold_confirmed"] == counts["sold"] == 4


def _broken(change: Any) -> dict[str, Any]:
    document = export_document(_history())
    change(document)
    return document


# Documents the import refuses, and where it says the problem is.
BAD_EXPORTS: list[tuple[Callable[[dict[str, Any]], object], str]] = [
    (lambda d: d.update(format="something-else"), "format"),
    (lambda d: d.update(version=3), "version"),
    (lambda d: d.update(version=True), "version"),
    (lambda d: d.pop("listings"), "listings"),
    (lambda d: d.pop("exported_at"), "exported_at"),
    (lambda d: d.update(events={}), "events"),
    (lambda d: d["listings"][3].pop("first_seen_at"), "listings[3].first_seen_at"),
    (lambda d: d["listings"][2].update(price=12.5), "listings[2].price"),
    (lambda d: d["listings"][2].update(price="cheap"), "listings[2].price"),
    (lambda d: d["listings"][1].update(item_id="1"), "listings[1].item_id"),
    (lambda d: d["listings"][0].update(state="lost"), "listings[0].state"),
    (lambda d: d["events"][4].update(at="yesterday"), "events[4].at"),
    (lambda d: d["events"].__setitem__(0, [1, 2]), "events[0]"),
    (lambda d: d["events"][4].update(evidence="rumour"), "events[4].evidence"),
    (lambda d: d["listings"][0].update(state_evidence=1), "listings[0].state_evidence"),
    (lambda d: d["listings"][0].update(total_price=13.35), "listings[0].total_price"),
    (lambda d: d["listings"][0].update(promoted="yes"), "listings[0].promoted"),
    (lambda d: d["listings"][0].update(absent_polls=-1), "listings[0].absent_polls"),
    (lambda d: d["monitor"].update(last_error_kind={}), "monitor.last_error_kind"),
]


@pytest.mark.parametrize(("change", "where"), BAD_EXPORTS)
def test_bad_export_raises_invalid_export(change: Any, where: str) -> None:
    with pytest.raises(InvalidExport) as caught:
        AnalysisInput.from_export(_broken(change))
    assert caught.value.where == where
    assert where in str(caught.value)


def test_truncated_or_non_json_export_raises_invalid_export() -> None:
    raw = json.dumps(export_document(_history())).encode()
    for bad in (raw[: len(raw) // 2], b"\xff\xfe", b"[1, 2]", b""):
        with pytest.raises(InvalidExport):
            AnalysisInput.from_export(bad)
    with pytest.raises(InvalidExport):
        AnalysisInput.from_export(copy.deepcopy([]))  # type: ignore[arg-type]


def test_an_export_spanning_centuries_is_analysed_over_a_bounded_flow() -> None:
    """Found by Schemathesis: a schema-valid export whose timestamps span from the year 48 to
    the year 9645 made the market-flow series one row per day (3.5 million rows, minutes of
    CPU in the import request). The series now covers at most the last `MAX_FLOW_DAYS`."""
    document = json.loads(
        (Path(__file__).parent / "data" / "fuzzed_export_centuries.json").read_text()
    )
    result = analyse_export(document)
    assert len(result["flow"]) == MAX_FLOW_DAYS
    assert result["flow"][-1]["date"] > result["flow"][0]["date"]


# The schema's `date-time`, checked as the import reads timestamps (jsonschema checks that
# format only with an optional package).
def _is_timestamp(value: object) -> bool:
    try:
        return not isinstance(value, str) or bool(datetime.fromisoformat(value))
    except ValueError:
        return False


FORMATS = FormatChecker()
FORMATS.checks("date-time")(_is_timestamp)
SCHEMA = Draft202012Validator(EXPORT_SCHEMA, format_checker=FORMATS)
PARTS: dict[str, type[BaseModel]] = {
    "ExportMonitor": ExportMonitor,
    "ExportListing": ExportListing,
    "ExportEvent": ExportEvent,
    "ExportPoll": ExportPoll,
}
A_POLL = {
    "id": "poll_1",
    "started_at": "2025-03-31T11:00:00+00:00",
    "finished_at": "2025-03-31T11:00:05+00:00",
    "items": 96,
    "new": 1,
    "changed": 2,
}


def test_the_served_schema_is_generated_from_the_models_that_validate_imports() -> None:
    """One draft 2020-12 document, its parts under `$defs`, each part's properties and
    required fields those of the model the import validates that part with; its top level
    as it always was (a title, no `$id`, no description)."""
    Draft202012Validator.check_schema(EXPORT_SCHEMA)
    assert export_json_schema() == EXPORT_SCHEMA
    assert EXPORT_SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert EXPORT_SCHEMA["title"] == SCHEMA_TITLE == "Nichescope monitor export"
    assert "$id" not in EXPORT_SCHEMA and "description" not in EXPORT_SCHEMA
    assert set(EXPORT_SCHEMA["$defs"]) == set(PARTS)
    for schema, model in [(EXPORT_SCHEMA, MonitorExport)] + [
        (EXPORT_SCHEMA["$defs"][name], model) for name, model in PARTS.items()
    ]:
        assert list(schema["properties"]) == list(model.model_fields), model.__name__
        required = [name for name, field in model.model_fields.items() if field.is_required()]
        assert schema["required"] == required, model.__name__
    assert EXPORT_SCHEMA["properties"]["version"]["const"] == EXPORT_VERSION
    assert EXPORT_SCHEMA["properties"]["format"]["const"] == EXPORT_FORMAT


def test_a_real_export_is_valid_under_the_schema_and_the_models() -> None:
    document = export_document(_history())  # built as api/monitors/export.py writes it
    document["polls"] = [A_POLL]
    SCHEMA.validate(document)
    MonitorExport.model_validate(document)
    assert tuple(document) == DOCUMENT_KEYS


def _path(loc: tuple[int | str, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


@pytest.mark.parametrize(("change", "where"), BAD_EXPORTS)
def test_the_models_and_the_schema_refuse_what_the_import_refuses(change: Any, where: str) -> None:
    """The document's model refuses each broken document at the place the import names, and
    so does the served schema: neither can take what the other refuses."""
    document = _broken(change)
    with pytest.raises(ValidationError) as caught:
        MonitorExport.model_validate(document)
    assert _path(caught.value.errors()[0]["loc"]) == where
    assert not SCHEMA.is_valid(document)


def _poll(**change: object) -> Callable[[dict[str, Any]], object]:
    return lambda d: d.update(polls=[{**A_POLL, **change}])


@pytest.mark.parametrize(
    ("change", "where", "problem"),
    [
        (
            lambda d: d.update(format="something-else"),
            "format",
            "expected 'nichescope.monitor-export', got 'something-else'",
        ),
        (lambda d: d.update(version=3), "version", "expected 1 or 2, got 3"),
        (lambda d: d.update(version=True), "version", "expected 1 or 2, got True"),
        (lambda d: d.pop("polls"), "polls", "missing (truncated export?)"),
        (lambda d: d.update(events={}), "events", "expected an array"),
        (
            lambda d: d.update(exported_at=5),
            "exported_at",
            "expected an ISO-8601 timestamp, got int",
        ),
        (lambda d: d.update(counts={"open": "1"}), "counts", "expected an object of integers"),
        (lambda d: d["listings"][3].pop("first_seen_at"), "listings[3].first_seen_at", "missing"),
        (
            lambda d: d["listings"][2].update(price=12.5),
            "listings[2].price",
            "expected a decimal string (like 12.50) or null, got 12.5",
        ),
        (
            lambda d: d["listings"][2].update(price="9" * 400),
            "listings[2].price",
            f"expected a finite decimal, got '{'9' * 75}'...",  # its first 80 characters
        ),
        (
            lambda d: d["listings"][1].update(item_id="1"),
            "listings[1].item_id",
            "expected a 64-bit integer, got '1'",
        ),
        (
            lambda d: d["listings"][1].update(category_id=1.0),
            "listings[1].category_id",
            "expected a 64-bit integer or null, got 1.0",
        ),
        (
            lambda d: d["listings"][0].update(state="lost"),
            "listings[0].state",
            "expected one of open, reserved, sold, deleted, got 'lost'",
        ),
        (
            lambda d: d["listings"][0].update(promoted="yes"),
            "listings[0].promoted",
            "expected true or false, got 'yes'",
        ),
        (
            lambda d: d["listings"][0].update(absent_polls=-1),
            "listings[0].absent_polls",
            "expected an integer of at least 0, got -1",
        ),
        (
            lambda d: d["events"][4].update(at="yesterday"),
            "events[4].at",
            "not an ISO-8601 timestamp: 'yesterday'",
        ),
        (lambda d: d["events"].__setitem__(0, [1, 2]), "events[0]", "expected an object, got list"),
        (
            lambda d: d["events"][4].update(evidence="rumour"),
            "events[4].evidence",
            "expected one of detail_api, item_page, absence or null, got 'rumour'",
        ),
        (
            lambda d: d["monitor"].update(last_error_kind={}),
            "monitor.last_error_kind",
            "expected a string or null, got {}",
        ),
        (lambda d: d.update(monitor=[]), "monitor", "expected an object, got list"),
        (_poll(pages=None), "polls[0].pages", "expected a 64-bit integer, got None"),
        (
            _poll(clock="sundial"),
            "polls[0].clock",
            "expected one of market, service or null, got 'sundial'",
        ),
    ],
)
def test_a_refusal_says_what_was_expected(change: Any, where: str, problem: str) -> None:
    """The words of a refusal (the import's 422 message) are the models' types' own."""
    with pytest.raises(InvalidExport) as caught:
        AnalysisInput.from_export(_broken(change))
    assert (caught.value.where, caught.value.problem) == (where, problem)


def test_writer_and_reader_share_the_format() -> None:
    """The writer's head is the format's, in the order the reader relies on (the version
    before any row); it writes store records whole, so every field a model defines must be
    one of its record's (a renamed store field would otherwise leave exports unnoticed)."""
    head = export_head(NOW, {}, {})
    assert tuple(head) == HEAD_KEYS == ("format", "version", "exported_at", "monitor", "counts")
    assert (head["format"], head["version"]) == (EXPORT_FORMAT, EXPORT_VERSION)
    assert HEAD_KEYS + ARRAY_KEYS == DOCUMENT_KEYS
    assert ARRAY_KEYS == ("listings", "events", "polls")
    pairs: list[tuple[type[BaseModel], type[Any]]] = [
        (ExportMonitor, MonitorRecord),
        (ExportListing, ListingRecord),
        (ExportEvent, ListingEventRecord),
        (ExportPoll, PollRecord),
    ]
    for model, record in pairs:
        written = {field.name for field in dataclasses.fields(record)}
        assert set(model.model_fields) <= written, model.__name__


def test_the_format_agrees_with_the_analysis_and_version_1() -> None:
    assert get_args(State) == STATES and get_args(EventKind) == EVENT_KINDS
    assert READABLE_VERSIONS == (1, EXPORT_VERSION)
    assert set(ExportListing.model_fields) - set(ExportListingV1.model_fields) == set(
        V2_LISTING_FIELDS
    )
    assert set(ExportEvent.model_fields) - set(ExportEventV1.model_fields) == {"evidence"}
