"""One definition of sell-through: sold / (sold + still open), deleted and reserved listings in
neither count. The niche's figure, its `sell_through_base`, the pages' "sold / sold + open"
column and the "why" sentence all divide the same two numbers (once "7 / 9 → 100%" showed:
the column counted two deleted listings the figure left out). And what an analysis rests on
(`evidence_depth`), which the dashboard's trust floor reads."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from api.web._filters import sold_of, why
from engine.analysis import (
    SELL_THROUGH_DEFINITION,
    TRUST_FLOOR,
    AnalysisInput,
    EvidenceDepth,
    analyse,
    evidence_depth,
)

from .factory import NOW, History


def _market() -> History:
    """Niches with deleted and reserved listings beside their sold and open ones."""
    h = History()
    for i in range(7):  # Zara: 7 sold, 2 deleted, nothing open: 100% sell-through
        h.listing(brand="Zara", seen_days_ago=20 - i, sold_days_ago=10 - i)
    for i in range(2):
        h.listing(brand="Zara", seen_days_ago=20 - i, deleted_days_ago=5)
    for i in range(4):  # Nike: 4 sold, 4 open, 3 deleted, 1 reserved: 50%
        h.listing(brand="Nike", seen_days_ago=25 - i, sold_days_ago=12 - i)
        h.listing(brand="Nike", seen_days_ago=25 - i)
    for _ in range(3):
        h.listing(brand="Nike", seen_days_ago=18, deleted_days_ago=3)
    h.listing(brand="Nike", seen_days_ago=18, reserved_days_ago=1)
    for i in range(6):  # Levi's: none deleted, 2 of 6 sold
        h.listing(brand="Levi's", seen_days_ago=15, sold_days_ago=5 - i if i < 2 else None)
    return h


def _niches() -> list[dict[str, object]]:
    h = _market()
    result = analyse(AnalysisInput.from_records(h.listings, h.events, now=NOW))
    return [n.to_json() for n in result.niches]


def test_the_column_and_the_figure_share_their_denominator() -> None:
    niches = _niches()
    assert niches
    for n in niches:
        cell = sold_of(n)
        sold, base = cell["sold"], cell["base"]
        assert (sold, base) == (n["sold"], n["sell_through_base"])
        assert base == n["sold"] + n["supply"]  # type: ignore[operator]
        assert n["sell_through"] == pytest.approx(sold / base), n
        # Every listing is in the denominator or shown apart, none in both.
        apart = n["deleted"] + n["reserved"]  # type: ignore[operator]
        assert base + apart == n["support"], n
    by_brand = {n["niche"]["brand"]: n for n in niches}  # type: ignore[index]
    zara, nike = sold_of(by_brand["Zara"]), sold_of(by_brand["Nike"])
    assert (zara["sold"], zara["base"], zara["apart"]) == (7, 7, "2 deleted left out")
    assert by_brand["Zara"]["sell_through"] == 1.0  # 7 / 7, never "7 / 9 → 100%"
    assert (nike["sold"], nike["base"]) == (4, 8)
    assert nike["apart"] == "3 deleted · 1 reserved left out"
    assert sold_of(by_brand["Levi's"])["apart"] == ""


def test_the_reasons_say_the_same_numbers() -> None:
    zara = next(n for n in _niches() if n["niche"]["brand"] == "Zara")  # type: ignore[index]
    line = next(line for line in why(zara) if line.startswith("Sell-through"))
    assert "7 sold of the 7 listings that sold or are still open (2 deleted left out)" in line


def test_an_analysis_stored_before_the_base_was_written_derives_it() -> None:
    old = {"sold": 7, "supply": 2, "deleted": 2, "reserved": 0, "support": 11}
    assert sold_of(old) == {"sold": 7, "base": 9, "apart": "2 deleted left out"}


def test_the_definition_is_one_sentence_for_pages_and_docs() -> None:
    assert "sold ÷ (sold + still open)" in SELL_THROUGH_DEFINITION
    docs = Path(__file__).parents[2] / "docs" / "analysis.md"
    assert "sold ÷ (sold + still open)" in docs.read_text(encoding="utf-8")


def test_evidence_depth_reads_days_of_history_and_sales() -> None:
    h = _market()
    result = analyse(AnalysisInput.from_records(h.listings, h.events, now=NOW)).to_json()
    depth = evidence_depth(result)
    assert depth.sales == result["counts"]["sold"] == 13
    assert depth.days == pytest.approx(result["window"]["days"]) and depth.days > 20
    assert not TRUST_FLOOR.cleared_by(depth)  # 13 sales: below the 30 the floor asks
    assert TRUST_FLOOR.cleared_by(EvidenceDepth(days=7.0, sales=30))
    assert not TRUST_FLOOR.cleared_by(EvidenceDepth(days=6.9, sales=3000))
    # A snapshot has no history, and what a document cannot say never clears the floor.
    snapshot = {**result, "evidence": "snapshot"}
    assert evidence_depth(snapshot) == EvidenceDepth(days=0.0, sales=13)
    for broken in ({}, {"window": {"days": math.nan}, "counts": {"sold": "many"}}):
        assert evidence_depth(broken) == EvidenceDepth(days=0.0, sales=0)
