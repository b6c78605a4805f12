"""The "median days to sell" cell says why it is empty: a reseller who sees "—" beside
"5 / 5 sold" must not take it for a fault. Each note is derived from the engine's own
`days_note`, so a change of its wording that the cell no longer reads fails here."""

from __future__ import annotations

from typing import Any

from api.web._filters import days_cell
from engine.analysis._explain import MIN_TIMED_SALES, days_note


def _niche(sold: int, timed: int, median: float | None, high: float | None) -> dict[str, Any]:
    return {
        "sold": sold,
        "km_median_days": median,
        "km_median_high": high,
        "days_note": days_note(timed, sold, median, high),
    }


def test_a_figure_well_supported_stands_alone() -> None:
    cell = days_cell(_niche(sold=12, timed=12, median=2.46, high=4.0))
    assert cell == {"text": "2.5", "note": "", "why": ""}


def test_withheld_for_few_sales_of_known_age_says_so() -> None:
    # The demo's case: every sale seen, most of them of listings already on sale when first seen.
    cell = days_cell(_niche(sold=5, timed=MIN_TIMED_SALES - 3, median=None, high=None))
    assert (cell["text"], cell["note"]) == ("—", "few sales of known age")
    assert "3 more sold listings were already on sale" in cell["why"], cell["why"]


def test_no_sale_and_most_unsold_are_told_apart() -> None:
    assert days_cell(_niche(sold=0, timed=0, median=None, high=None))["note"] == "no sale yet"
    unsold = days_cell(_niche(sold=6, timed=6, median=None, high=None))
    assert unsold["note"] == "most still unsold" and "beyond" in unsold["why"]


def test_a_figure_whose_interval_runs_past_the_window_keeps_its_reason_in_the_title() -> None:
    cell = days_cell(_niche(sold=8, timed=8, median=6.0, high=None))
    assert (cell["text"], cell["note"]) == ("6.0", "")
    assert "uncertain" in cell["why"]


def test_an_analysis_without_history_has_nothing_to_explain() -> None:
    assert days_cell({"sold": 3, "km_median_days": None, "days_note": None}) == {
        "text": "—",
        "note": "",
        "why": "",
    }
