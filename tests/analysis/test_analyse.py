"""`analyse`: backoff, snapshot vs history, per-niche metrics, score, alerts."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from engine.analysis import AnalysisInput, AnalysisResult, analyse, wilson

from .factory import NOW, History


def run(h: History, **kw: object) -> AnalysisResult:
    return analyse(AnalysisInput.from_records(h.listings, h.events, now=NOW), **kw)  # type: ignore[arg-type]


def by_label(result: AnalysisResult) -> dict[str, object]:
    return {n.label: n for n in result.niches}


def test_sparse_niches_back_off_to_brand_then_category() -> None:
    h = History()
    for _ in range(6):
        h.listing(brand="Nike", size="M")
    for size in ("L", "L", "L", "S", "S"):  # two sparse exact niches, 5 together
        h.listing(brand="Nike", size=size)
    h.listing(brand="Zara", size="M")
    h.listing(brand="Zara", size="L")
    h.listing(brand=None, size="L")
    result = run(h, min_support=5)
    levels = {n.label: (n.key.level, n.support) for n in result.niches}
    assert levels == {
        "category 1 · Nike · size M · good": ("exact", 6),
        "category 1 · Nike · sizes and conditions mixed": ("brand", 5),
        "category 1 · brands mixed": ("category", 3),
    }
    assert sum(n.support for n in result.niches) == len(h.listings)
    assert result.counts["niches_brand"] == 1


def test_snapshot_has_no_sell_through_and_ranks_by_demand_proxy() -> None:
    h = History()
    for _ in range(5):
        h.listing(brand="Nike", favourites=10, listed_days_ago=5, seen_days_ago=0)
    for _ in range(5):
        h.listing(brand="Zara", favourites=1, listed_days_ago=5, seen_days_ago=0)
    result = analyse(AnalysisInput.from_records(h.listings, [], now=NOW))
    assert result.evidence == "snapshot"
    assert any("Snapshot" in note for note in result.notes)
    top = result.niches[0]
    assert top.key.brand == "Nike"
    assert top.sell_through is None and top.km_median_days is None and top.trend is None
    assert top.score_kind == "demand_proxy"
    assert top.demand_velocity == pytest.approx(10 / 5)  # 10 favourites over 5 days each
    assert top.score == pytest.approx(2.0 * 20.0 * 5 / (5 + 5))
    assert result.alerts == ()


def test_history_metrics_and_score_formula() -> None:
    h = History()
    # Listed and first seen 20 days ago; 4 sold after 2, 4, 6, 8 days; 1 deleted at 9; 5 open.
    for days, price in ((2, "10.00"), (4, "20.00"), (6, "30.00"), (8, "40.00")):
        h.listing(price=price, listed_days_ago=20, seen_days_ago=20, sold_days_ago=20 - days)
    h.listing(listed_days_ago=20, seen_days_ago=20, deleted_days_ago=11)
    for price in ("12.00", "14.00", "16.00", "18.00", "20.00"):
        h.listing(price=price, listed_days_ago=20, seen_days_ago=20, favourites=4)
    result = run(h)
    assert result.evidence == "history"
    [n] = result.niches
    assert (n.support, n.supply, n.sold, n.deleted) == (10, 5, 4, 1)
    assert n.sell_through == pytest.approx(4 / 9)
    low, high = wilson([4], [9])  # type: ignore[arg-type]
    assert (n.sell_through_low, n.sell_through_high) == pytest.approx((low[0], high[0]))
    assert n.sold_price.median == 25.0 and (n.sold_price.q1, n.sold_price.q3) == (17.5, 32.5)
    assert n.ask_price.median == 16.0 and n.ask_price.iqr == 4.0
    # KM: at risk 10, 9, 8, 7 at days 2, 4, 6, 8 (deleted at 9 is censored) -> never <= 0.5.
    assert n.km_median_days is None
    assert n.km_curve is not None and n.km_curve.survival[-1] == pytest.approx(
        0.9 * 8 / 9 * 7 / 8 * 6 / 7
    )
    assert n.score == pytest.approx(low[0] * 25.0 / result.window.days)
    # Window = 20 days observed, midpoint 10 days ago: all four sales in the first half.
    assert n.trend is not None and (n.trend.recent_sold, n.trend.previous_sold) == (0, 4)
    assert n.demand_velocity == pytest.approx(20 / (2 + 4 + 6 + 8 + 9 + 5 * 20))
    json.dumps(result.to_json(), allow_nan=False)


def test_thin_niche_is_shrunk_towards_its_brand_before_scoring() -> None:
    # Nike / S: 6 listings, sold after 1, 2, 2, 3, 3 days at 50..70 (median 60), one open:
    # KM median 2 days. Alone it scores wilson_low(5/6) x 60 / 2 = 0.436 x 30 = 13.1.
    h = History()
    for days, price in ((1, "50.00"), (2, "55.00"), (2, "60.00"), (3, "65.00"), (3, "70.00")):
        h.listing(
            size="S", price=price, listed_days_ago=20, seen_days_ago=20, sold_days_ago=20 - days
        )
    h.listing(size="S", price="60.00", listed_days_ago=20, seen_days_ago=20)
    # Nike / M, its sibling: 40 listings at 55, 19 sold at day 4, the 20th at day 8 (survival
    # 20/40: KM median 8 days), 6 more at days 10-15, 14 open.
    for days in [4] * 19 + [8, 10, 11, 12, 13, 14, 15]:
        h.listing(price="55.00", listed_days_ago=20, seen_days_ago=20, sold_days_ago=20 - days)
    for _ in range(14):
        h.listing(price="55.00", listed_days_ago=20, seen_days_ago=20)
    # Zara / M, the only niche of its brand: 40 at 30, 19 sold at day 1, the 20th at day 3
    # (KM median 3), 8 more at days 5-12, 12 open.
    for days in [1] * 19 + [3, 5, 6, 7, 8, 9, 10, 11, 12]:
        h.listing(
            brand="Zara",
            price="30.00",
            listed_days_ago=20,
            seen_days_ago=20,
            sold_days_ago=20 - days,
        )
    for _ in range(12):
        h.listing(brand="Zara", price="30.00", listed_days_ago=20, seen_days_ago=20)
    result = run(h, min_support=5)
    niches = by_label(result)
    thin, sibling, zara = (
        niches[f"category 1 · {b} · size {s} · good"]
        for b, s in (("Nike", "S"), ("Nike", "M"), ("Zara", "M"))
    )
    assert (thin.sold, thin.supply, thin.sold_price.median, thin.km_median_days) == (5, 1, 60, 2)
    assert (sibling.sold, sibling.supply, sibling.sold_price.median) == (26, 14, 55)
    assert sibling.km_median_days == pytest.approx(8)
    assert (zara.sold, zara.supply, zara.km_median_days) == (28, 12, pytest.approx(3))
    # The parent, Nike in category 1: pooled sell-through P = 31/46, sales-weighted median
    # price Y = (5x60 + 26x55)/31 and days D = (5x2 + 26x8)/31; prior worth m = 5.
    m, big_p = 5, 31 / 46
    big_y, big_d = (5 * 60 + 26 * 55) / 31, (5 * 2 + 26 * 8) / 31

    def expected(sold: int, trials: int, price: float, days: float) -> float:
        rate = (sold + m * big_p) / (trials + m)
        low, _ = wilson([rate * trials], [trials])  # type: ignore[arg-type]
        price = (sold * price + m * big_y) / (sold + m)
        days = (sold * days + m * big_d) / (sold + m)
        return float(low[0]) * price / max(1.0, days)

    assert thin.score == pytest.approx(expected(5, 6, 60, 2))  # 0.374 x 57.90 / 4.516 = 4.79
    assert thin.score == pytest.approx(4.792, abs=1e-3)
    assert sibling.score == pytest.approx(expected(26, 40, 55, 8))  # 3.50
    # Zara is its parent's only niche: its own figures are the prior, the score is the raw one.
    low, _ = wilson([28], [40])  # type: ignore[arg-type]
    assert zara.score == pytest.approx(low[0] * 30 / 3)  # 5.46
    # So the lucky six no longer outrank a solid forty (raw, Nike / S would score 13.1).
    assert [n.label for n in result.niches][:3] == [zara.label, thin.label, sibling.label]


def test_category_level_niche_is_shrunk_towards_its_category() -> None:
    h = History()
    # Nike / M: 10 at 20, sold after 2, 4, 6, 8 days, 6 open: KM median not reached, so the
    # 20-day window stands in. The only niche of its (category, brand): its raw score.
    for days in (2, 4, 6, 8):
        h.listing(listed_days_ago=20, seen_days_ago=20, sold_days_ago=20 - days)
    for _ in range(6):
        h.listing(listed_days_ago=20, seen_days_ago=20)
    # Three thin listings of other brands pool into the category niche: two sold after a day
    # at 80 (KM median 1), one open. Raw: wilson_low(2/3) x 80 / 1 = 16.6.
    for brand in ("Zara", "Puma"):
        h.listing(
            brand=brand, price="80.00", listed_days_ago=20, seen_days_ago=20, sold_days_ago=19
        )
    h.listing(brand="Zara", price="80.00", listed_days_ago=20, seen_days_ago=20)
    result = run(h, min_support=5)
    nike, pool = (
        by_label(result)["category 1 · Nike · size M · good"],
        by_label(result)["category 1 · brands mixed"],
    )
    assert pool.key.level == "category" and (pool.sold, pool.supply) == (2, 1)
    # Two sales are too few to show a median time to sell, but the score uses it, shrunk.
    assert pool.km_median_days is None and pool.days_note is not None
    assert pool.days_note.startswith("Withheld: only 2 sales")
    assert pool.score_parts is not None and pool.score_parts.days == 1
    low, _ = wilson([4], [10])  # type: ignore[arg-type]
    assert nike.score == pytest.approx(low[0] * 20 / 20)
    # The category's niches pooled: P = 6/13, Y = (2x80 + 4x20)/6 = 40, D = (2x1 + 4x20)/6.
    m, big_p, big_y, big_d = 5, 6 / 13, 40.0, 82 / 6
    rate = (2 + m * big_p) / (3 + m)
    low, _ = wilson([rate * 3], [3])  # type: ignore[arg-type]
    price, days = (2 * 80 + m * big_y) / (2 + m), (2 * 1 + m * big_d) / (2 + m)
    assert pool.score == pytest.approx(low[0] * price / days)
    assert pool.score < 2.0


def _neutral_market(h: History, brands: tuple[str, ...]) -> None:
    # Every niche: 20 listings seen 30 days ago, 4 sold evenly over the window (2 per half).
    for brand in brands:
        for i in range(20):
            sold = 2.0 + 7.5 * i if i < 4 else None
            h.listing(brand=brand, price="20.00", listed_days_ago=30, sold_days_ago=sold)


def test_neutral_market_raises_no_alerts() -> None:
    h = History()
    _neutral_market(h, ("A", "B", "C", "D", "E"))
    result = run(h)
    assert result.alerts == ()
    assert not any(n.hot for n in result.niches)


def test_deal_jump_and_new_hot_alerts_fire_with_their_numbers() -> None:
    h = History()
    _neutral_market(h, ("A", "B", "C", "D", "E", "F"))
    # "Hot": 12 sales in the recent half at 50, none before; 3 still open, one at 20.
    for i in range(12):
        h.listing(brand="Hot", price="50.00", listed_days_ago=30, sold_days_ago=1 + i)
    cheap = h.listing(brand="Hot", price="20.00", listed_days_ago=30, title="cheap jacket")
    h.listing(brand="Hot", price="48.00", listed_days_ago=30)
    h.listing(brand="Hot", price="55.00", listed_days_ago=30)
    result = run(h)
    kinds = {(a.kind, a.niche.brand) for a in result.alerts}
    assert kinds == {("deal", "Hot"), ("sell_through_jump", "Hot"), ("new_hot_niche", "Hot")}
    deal = next(a for a in result.alerts if a.kind == "deal")
    assert deal.item_id == cheap
    assert deal.figures["price"] == 20.0 and deal.figures["median_sold_price"] == 50.0
    assert deal.figures["discount"] == pytest.approx(0.6)
    assert "asks €20.00, 60% under what" in deal.reason and "cheap jacket" in deal.reason
    assert "(median €50.00 over 12 sales" in deal.reason
    jump = next(a for a in result.alerts if a.kind == "sell_through_jump")
    assert (jump.figures["sold_previous"], jump.figures["trials_previous"]) == (0, 15)
    assert (jump.figures["sold_recent"], jump.figures["trials_recent"]) == (12, 15)
    assert "80% of its listings sold in the recent half" in jump.reason
    assert "against 0% before (0 of 15)" in jump.reason
    assert result.counts["alerts_deal"] == 1
    hot = by_label(result)["category 1 · Hot · size M · good"]
    assert hot is result.niches[0]


def test_window_shorter_than_requested_is_said() -> None:
    h = History()
    for _ in range(5):
        h.listing(seen_days_ago=10, sold_days_ago=2)
    data = AnalysisInput.from_records(h.listings, h.events, now=NOW, window_days=90)
    result = analyse(data)
    assert result.window.days == pytest.approx(10)
    assert result.window.start == NOW - timedelta(days=10)
    assert any("shortened" in note for note in result.notes)
    assert sum(day.sold for day in result.flow) == 5


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        analyse(AnalysisInput.from_records([], [], now=NOW), top_n=0)
    empty = analyse(AnalysisInput.from_records([], [], now=NOW))
    assert len(empty.niches) == 0 and empty.evidence == "snapshot"


def test_a_niche_stands_out_in_a_brisk_market() -> None:
    """Hot is judged on the odds scale: in a market where 70% of listings sell over the
    window, a niche that sold 30 of 30 is clearly hot, though 1.5 x 70% is above 100% (the
    rule compared sell-through directly before, and nothing could be hot in such a market)."""
    h = History()
    for brand in ("A", "B", "C", "D"):  # 20 listings each, 13 sold: a brisk market
        for i in range(20):
            h.listing(
                brand=brand,
                price="20.00",
                listed_days_ago=30,
                sold_days_ago=20.0 if i < 13 else None,
            )
    for _ in range(30):  # everything sold, quickly
        h.listing(brand="Hot", price="20.00", listed_days_ago=30, sold_days_ago=28.0)
    result = run(h)
    sold = sum(n.sold for n in result.niches)
    assert sold / (sold + sum(n.supply for n in result.niches)) > 0.7
    hot = {n.key.brand for n in result.niches if n.hot}
    assert hot == {"Hot"}


def test_an_analysis_without_categories_says_so() -> None:
    unknown = History()
    for size in ("M", "M", "L"):
        unknown.listing(category=None, size=size, sold_days_ago=2.0)
    note = "Categories are unknown"
    assert any(n.startswith(note) for n in run(unknown).notes)
    known = History()
    known.listing(category=None)
    known.listing(category=1904)
    assert not any(n.startswith(note) for n in run(known).notes)
