"""Likely sales (sold by absence from the feed): reported always, ranked on when asked, or
by default when the window has likely sales and not one confirmed sale (the sales basis)."""

from __future__ import annotations

from typing import Any

from engine.analysis import (
    AnalysisInput,
    AnalysisResult,
    SalesEvidence,
    analyse,
    choose_sales_basis,
    sales_evidence,
    with_sales_basis,
)

from .factory import NOW, History, export_document

REFUSED = "Sales inferred from absence: the marketplace refused item pages"
WITHDRAWAL = "cannot tell a sale from a withdrawal"


def _market() -> History:
    """Nike: 2 confirmed sales in 6 listings. Zara: 4 likely sales (and no confirmed one)
    in 6 listings, each last seen 6 days ago, declared sold 5 days ago."""
    h = History()
    for i in range(6):
        h.listing(brand="Nike", seen_days_ago=20, sold_days_ago=4.0 if i < 2 else None)
    for i in range(6):
        h.listing(
            brand="Zara", seen_days_ago=20, sold_days_ago=5.0 if i < 4 else None, sold_by="absence"
        )
    return h


def _likely_only() -> History:
    """Zara of `_market` alone: 4 likely sales, not one confirmed (every source refused)."""
    h = History()
    for i in range(6):
        h.listing(
            brand="Zara", seen_days_ago=20, sold_days_ago=5.0 if i < 4 else None, sold_by="absence"
        )
    return h


def _run(h: History, include: bool | None, window_days: float | None = None) -> AnalysisResult:
    data = AnalysisInput.from_records(h.listings, h.events, now=NOW, window_days=window_days)
    return analyse(data, min_support=5, include_likely_sales=include, generated_at=NOW)


def _basis(result: AnalysisResult) -> tuple[Any, ...]:
    document = result.to_json()
    return (
        document["sales_basis"],
        document["sales_basis_reason"],
        document["include_likely_sales_requested"],
        document["include_likely_sales"],
    )


def test_confirmed_sales_rank_and_likely_ones_are_reported() -> None:
    result = _run(_market(), include=False)
    niches = {n.key.brand: n for n in result.niches}
    assert (niches["Nike"].sold, niches["Nike"].supply) == (2, 4)
    # A likely sale is an unsold listing, censored when the feed last showed it.
    assert (niches["Zara"].sold, niches["Zara"].supply) == (0, 6)
    assert niches["Zara"].km_median_days is None
    assert result.niches[0].key.brand == "Nike"
    counts = result.counts
    assert (counts["sold"], counts["sold_confirmed"], counts["sold_likely"]) == (2, 2, 4)
    assert sum(day.sold for day in result.flow) == 2
    [note] = [n for n in result.notes if "likely sale" in n]
    assert "2 confirmed sales" in note and "4 likely sales" in note
    assert "confirmed sales only" in note
    assert result.to_json()["include_likely_sales"] is False


def test_opting_in_ranks_on_likely_sales_too() -> None:
    result = _run(_market(), include=True)
    niches = {n.key.brand: n for n in result.niches}
    assert (niches["Zara"].sold, niches["Zara"].supply) == (4, 2)
    assert result.niches[0].key.brand == "Zara"
    counts = result.counts
    assert (counts["sold"], counts["sold_confirmed"], counts["sold_likely"]) == (6, 2, 4)
    assert sum(day.sold for day in result.flow) == 6
    assert any("ranked on both" in n for n in result.notes)
    assert result.to_json()["include_likely_sales"] is True


def test_without_likely_sales_nothing_changes() -> None:
    h = _market()
    confirmed_only = History()
    confirmed_only.listings = [x for x in h.listings if x.brand == "Nike"]
    confirmed_only.events = [
        e for e in h.events if e.item_id in {x.item_id for x in h.listings[:6]}
    ]
    a, b = _run(confirmed_only, include=False), _run(confirmed_only, include=True)
    # Only what says which sales were asked for and counted differs.
    asked = dict.fromkeys(
        (
            "include_likely_sales",
            "include_likely_sales_requested",
            "sales_basis",
            "sales_basis_reason",
            "sales_basis_note",
        )
    )
    assert {**a.to_json(), **asked} == {**b.to_json(), **asked}
    assert a.counts["sold_likely"] == 0
    assert not any("likely sale" in n for n in a.notes)


def test_by_default_likely_sales_count_when_no_sale_was_confirmed() -> None:
    result = _run(_likely_only(), include=None)
    assert _basis(result) == ("likely", "no_confirmed_sales", None, True)
    [zara] = result.niches
    assert (zara.sold, zara.supply, zara.sold_confirmed, zara.sold_likely) == (4, 2, 0, 4)
    counts = result.counts
    assert (counts["sold"], counts["sold_confirmed"], counts["sold_likely"]) == (4, 0, 4)
    assert sum(day.sold for day in result.flow) == 4
    note = result.to_json()["sales_basis_note"]
    assert note.startswith(REFUSED) and WITHDRAWAL in note
    [data_note] = [n for n in result.notes if "likely sale" in n]
    assert "ranked on likely sales" in data_note and WITHDRAWAL in data_note


def test_by_default_one_confirmed_sale_keeps_confirmed_sales_only() -> None:
    auto, asked = _run(_market(), include=None), _run(_market(), include=False)
    assert _basis(auto) == ("confirmed", "confirmed_sales_seen", None, False)
    assert _basis(asked) == ("confirmed", "requested", False, False)
    assert [(n.key, n.sold, n.supply) for n in auto.niches] == [
        (n.key, n.sold, n.supply) for n in asked.niches
    ]
    assert auto.counts == asked.counts
    note = auto.to_json()["sales_basis_note"]
    assert note.startswith("Confirmed sales only: a source confirmed sales")
    assert "4 likely sales" in note and WITHDRAWAL in note


def test_asking_for_confirmed_sales_only_is_honoured_even_when_nothing_is_left() -> None:
    result = _run(_likely_only(), include=False)
    assert _basis(result) == ("confirmed", "requested", False, False)
    assert result.counts["sold"] == 0 and result.counts["sold_likely"] == 4
    assert result.niches[0].sold == 0
    assert result.to_json()["sales_basis_note"].startswith("Confirmed sales only, as asked")
    assert any("confirmed sales only, as asked" in n for n in result.notes)


def test_asking_for_likely_sales_counts_both_and_says_what_absence_cannot_tell() -> None:
    result = _run(_market(), include=True)
    assert _basis(result) == ("confirmed_and_likely", "requested", True, True)
    assert WITHDRAWAL in result.to_json()["sales_basis_note"]


def test_without_likely_sales_the_default_is_confirmed_sales() -> None:
    h = History()
    for i in range(6):
        h.listing(brand="Nike", seen_days_ago=20, sold_days_ago=4.0 if i < 2 else None)
    result = _run(h, include=None)
    assert _basis(result) == ("confirmed", "no_likely_sales", None, False)
    assert result.to_json()["sales_basis_note"].startswith("Sales are confirmed sales")


def test_only_the_window_s_sales_decide() -> None:
    """A sale confirmed before the window does not stop the window's likely sales counting."""
    h = History()
    for i in range(6):
        h.listing(brand="Nike", seen_days_ago=20, sold_days_ago=10.0 if i < 2 else None)
    for i in range(6):
        h.listing(
            brand="Zara", seen_days_ago=20, sold_days_ago=1.0 if i < 3 else None, sold_by="absence"
        )
    data = AnalysisInput.from_records(h.listings, h.events, now=NOW, window_days=5)
    assert sales_evidence(data) == SalesEvidence(confirmed=0, likely=3)
    assert _basis(_run(h, include=None, window_days=5))[:2] == ("likely", "no_confirmed_sales")
    assert _basis(_run(h, include=None))[:2] == ("confirmed", "confirmed_sales_seen")


def test_the_same_evidence_chooses_the_same_basis() -> None:
    """Reproducible: the choice is a function of the evidence, whichever way it arrives."""
    h = _likely_only()
    records = AnalysisInput.from_records(h.listings, h.events, now=NOW)
    exported = AnalysisInput.from_export(export_document(h))
    first, again = (analyse(records, generated_at=NOW) for _ in range(2))
    imported = analyse(exported, generated_at=NOW)
    assert first.to_json() == again.to_json()
    assert _basis(first) == _basis(imported) == ("likely", "no_confirmed_sales", None, True)
    for evidence in (SalesEvidence(0, 0), SalesEvidence(0, 3), SalesEvidence(2, 3)):
        for asked in (None, False, True):
            assert choose_sales_basis(asked, evidence) == choose_sales_basis(asked, evidence)


def test_an_analysis_stored_before_the_choice_reads_with_its_basis() -> None:
    new = _run(_likely_only(), include=None).to_json()
    assert with_sales_basis(new) == new
    old = {k: v for k, v in _run(_market(), include=False).to_json().items() if "basis" not in k}
    del old["include_likely_sales_requested"]
    read = with_sales_basis(old)
    assert (read["sales_basis"], read["sales_basis_reason"]) == ("confirmed", "stored_before_auto")
    assert read["include_likely_sales_requested"] is False
    assert "the default when this analysis was made" in read["sales_basis_note"]
    assert "4 likely sales" in read["sales_basis_note"]
    opted_in = with_sales_basis({"include_likely_sales": True, "counts": {}})
    assert opted_in["sales_basis"] == "confirmed_and_likely"
    assert with_sales_basis({})["sales_basis"] == "confirmed"  # not even counts: still read
