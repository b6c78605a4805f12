"""Likely sales (sold by absence from the feed): reported always, ranked on only when asked."""

from __future__ import annotations

from engine.analysis import AnalysisInput, AnalysisResult, analyse

from .factory import NOW, History


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


def _run(h: History, include: bool) -> AnalysisResult:
    data = AnalysisInput.from_records(h.listings, h.events, now=NOW)
    return analyse(data, min_support=5, include_likely_sales=include, generated_at=NOW)


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
    assert {**a.to_json(), "include_likely_sales": None} == {
        **b.to_json(),
        "include_likely_sales": None,
    }
    assert a.counts["sold_likely"] == 0
    assert not any("likely sale" in n for n in a.notes)
