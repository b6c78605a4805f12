"""`AnalysisInput.from_export`: round trip with `from_records`, and clear errors."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from api.monitors.export import EXPORT_SCHEMA
from engine.analysis import AnalysisInput, InvalidExport, analyse
from engine.analysis._analyse import MAX_FLOW_DAYS
from engine.runs._analyser import analyse_export

from .factory import NOW, History, export_document


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


@pytest.mark.parametrize(
    ("change", "where"),
    [
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
    ],
)
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
