"""What makes a niche's figures trustworthy: listing ages the monitor can vouch for (left
truncation), withheld and widened figures when the evidence is thin, the polls' coverage of
the window, readable names with the reason for a back-off, and the score's parts."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from engine.analysis import AnalysisInput, PollMark, analyse, kaplan_meier
from engine.analysis._columns import epoch

from .factory import NOW, History

DAY = 86400.0


def _polls(every_hours: float, days: float = 30.0, gaps: tuple[tuple[float, float], ...] = ()):
    """Good polls every `every_hours` over the last `days` days (a gap (a, b) in days ago
    has none), as the monitor would have recorded them."""
    marks = []
    t = epoch(NOW) - days * DAY
    while t <= epoch(NOW) + 1:
        ago = (epoch(NOW) - t) / DAY
        if not any(b <= ago <= a for a, b in gaps):
            marks.append(PollMark(at=t, ok=True, clock="market"))
        t += every_hours * 3600
    return tuple(marks)


def _run(h: History, polls=(), names=None, **kw):
    data = AnalysisInput.from_records(h.listings, h.events, now=NOW, polls=polls)
    if names is not None:
        data = AnalysisInput(
            listings=data.listings,
            events=data.events,
            now=data.now,
            polls=data.polls,
            category_names=names,
        )
    return analyse(data, **kw)


def _niche(result, brand: str):
    return next(n for n in result.niches if n.key.brand == brand)


def test_listings_on_sale_before_the_first_poll_do_not_read_as_fast_selling() -> None:
    """ "Old" listings already on sale when the monitor started, all selling within two days
    of its start: with no listing date their age is unknown, so they say nothing about time
    to sell (taken as listed at first sight they would read as a two-day niche)."""
    h = History()
    for i in range(10):
        h.listing(brand="Old", seen_days_ago=30, sold_days_ago=30 - 0.2 * (i + 1))
    for i in range(10):  # listed while watched: 8 days each
        seen = 25 - i
        h.listing(brand="New", seen_days_ago=seen, sold_days_ago=seen - 8)
    result = _run(h, polls=_polls(1.0))
    old, new = _niche(result, "Old"), _niche(result, "New")
    assert old.sold == 10 and old.km_median_days is None
    assert old.days_note is not None and "already on sale when first seen" in old.days_note
    assert new.km_median_days == pytest.approx(8.0, abs=0.6)
    assert result.coverage is not None
    assert result.coverage.listings_age_unknown == 10
    assert any("already on sale when first seen" in note for note in result.notes)


def test_a_listing_date_is_used_only_when_it_agrees_with_the_sightings() -> None:
    h = History()
    for _ in range(6):  # a listing date 20 days before first sight: used, delayed entry
        h.listing(brand="Dated", listed_days_ago=30, seen_days_ago=29, sold_days_ago=20)
    for i in range(6):  # a listing date after the first sighting: a wrong date, ignored
        seen = 20 - i
        h.listing(brand="Future", listed_days_ago=seen - 5, seen_days_ago=seen, sold_days_ago=2)
    result = _run(h, polls=_polls(1.0))
    assert _niche(result, "Dated").km_median_days == pytest.approx(10.0, abs=0.1)
    # The wrong dates are ignored: listed between the poll before and first sight.
    future = _niche(result, "Future")
    assert future.km_median_days is not None
    assert 15.0 <= future.km_median_days <= 18.1


def test_a_listing_that_appeared_during_a_long_gap_has_an_unknown_age() -> None:
    h = History()
    for _ in range(6):  # seen right after a five-day gap in the polls
        h.listing(brand="AfterGap", seen_days_ago=10, sold_days_ago=8)
    for _ in range(6):
        h.listing(brand="Watched", seen_days_ago=20, sold_days_ago=18)
    h.listing(brand="Anchor", seen_days_ago=30)  # the monitor's first poll
    result = _run(h, polls=_polls(1.0, gaps=((15.0, 10.01),)))
    assert _niche(result, "AfterGap").km_median_days is None
    assert _niche(result, "Watched").km_median_days == pytest.approx(2.0, abs=0.05)
    coverage = result.coverage
    assert coverage is not None and coverage.clock == "market"
    (gap,) = coverage.gaps
    assert (NOW - gap.end).total_seconds() / DAY == pytest.approx(10.0, abs=0.05)
    assert gap.why.startswith("no polls")
    assert any("missed 1 stretch" in note for note in result.notes)


def test_failed_polls_are_counted_and_named_in_the_gaps() -> None:
    h = History()
    h.listing(brand="A", seen_days_ago=30)
    polls = _polls(1.0, gaps=((12.0, 10.0),))
    at = epoch(NOW) - 11 * DAY
    blocked = tuple(
        PollMark(at=at + i * 3600, ok=False, why="blocked", clock="market") for i in range(5)
    )
    result = _run(h, polls=polls + blocked)
    coverage = result.coverage
    assert coverage is not None
    assert (coverage.polls_failed, coverage.suspected_blocks) == (5, 5)
    assert coverage.gaps[0].why == "the marketplace blocked or refused the polls"
    # Two days without a good poll, from the last one before to the first one after.
    assert coverage.to_json()["gaps"][0]["hours"] == pytest.approx(49.0, abs=1.5)


def test_thin_days_to_sell_are_withheld_and_the_interval_widens_with_fewer_sales() -> None:
    h = History()
    for i in range(5):
        sold = 15.0 - i if i < 4 else None
        h.listing(brand="Thin", listed_days_ago=20 - i, seen_days_ago=20 - i, sold_days_ago=sold)
    for i in range(40):
        listed = 25 - 0.5 * i
        h.listing(
            brand="Wide",
            size="L",
            listed_days_ago=listed,
            seen_days_ago=listed,
            sold_days_ago=listed - 3 - (i % 5),
        )
    for i in range(8):
        listed = 25 - 2 * i
        h.listing(
            brand="Few",
            listed_days_ago=listed,
            seen_days_ago=listed,
            sold_days_ago=listed - 3 - (i % 5),
        )
    result = _run(h)
    thin, wide, few = _niche(result, "Thin"), _niche(result, "Wide"), _niche(result, "Few")
    assert thin.km_median_days is None and thin.km_median_low is None
    assert thin.days_note is not None and thin.days_note.startswith("Withheld: only 4 sales")
    for n in (wide, few):
        assert n.km_median_low is not None and n.km_median_high is not None
        assert n.km_median_low <= n.km_median_days <= n.km_median_high
    width = lambda n: n.km_median_high - n.km_median_low  # noqa: E731
    assert width(few) > width(wide)


def test_the_median_interval_covers_the_true_median() -> None:
    """Exponential lives with a true median of 10 days: over 200 samples of 60 listings the
    95% interval covers it in about 95% of them (at least 88%)."""
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(200):
        life = rng.exponential(10 / np.log(2), 60)
        cens = rng.uniform(5, 60, 60)
        km = kaplan_meier(
            np.zeros(60, np.int64), np.zeros(60), np.minimum(life, cens), life <= cens, 1
        )
        lo, hi = km.median_low[0], km.median_high[0]
        hits += bool(lo <= 10.0 and (np.isnan(hi) or hi >= 10.0))
    assert hits >= 176


def test_niches_carry_category_names_and_say_why_they_are_coarse() -> None:
    h = History()
    for _ in range(5):
        h.listing(brand="Nike", size="M", condition="Very good", listed_days_ago=10)
    for size in ("S", "L", "XL"):
        h.listing(brand="Nike", size=size, listed_days_ago=10)
        h.listing(brand="Nike", size=size, listed_days_ago=10)
    h.listing(brand="Zara", size="M", listed_days_ago=10)
    h.listing(brand="Zara", size="S", listed_days_ago=10)
    h.listing(brand="Mango", listed_days_ago=10)
    result = _run(h, names={1: "Men › Shoes › Sneakers"})
    labels = {n.key.level: n.key for n in result.niches}
    exact, brand, category = labels["exact"], labels["brand"], labels["category"]
    assert exact.label == "Men › Shoes › Sneakers · Nike · size M · Very good"
    assert exact.backoff is None
    assert brand.label == "Men › Shoes › Sneakers · Nike · sizes and conditions mixed"
    assert brand.backoff is not None
    assert brand.backoff.startswith("3 sizes and conditions with fewer than 5 listings each")
    assert "shown together at brand level" in brand.backoff
    assert category.label == "Men › Shoes › Sneakers · brands mixed"
    assert category.backoff is not None and "largest: Zara, 2 listings" in category.backoff
    assert "cat " not in " ".join(n.label for n in result.niches)


def test_the_score_is_its_parts_and_says_so() -> None:
    h = History()
    for i in range(12):
        h.listing(
            brand="Nike",
            price="30.00",
            listed_days_ago=20,
            seen_days_ago=20,
            sold_days_ago=(18 - i) if i < 8 else None,
        )
    for _ in range(6):
        h.listing(brand="Zara", listed_days_ago=20, seen_days_ago=20)
    h.listing(brand="Zara", listed_days_ago=20, seen_days_ago=20, sold_days_ago=10)
    result = _run(h)
    nike = _niche(result, "Nike")
    parts = nike.score_parts
    assert parts is not None and parts.days_from == "kaplan_meier"
    assert nike.score == pytest.approx(
        parts.sell_through_low * parts.price_shrunk / max(1.0, parts.days_shrunk)
    )
    assert parts.sell_through == pytest.approx(8 / 12)
    assert parts.parent_label == "category 1 · Nike, all sizes and conditions"
    assert "€30.00 typical sold price" in parts.explanation
    assert f"€{nike.score:.2f} per listing-day" in parts.explanation
    assert nike.hot_reason is not None and nike.hot_reason.startswith(("Hot", "Not hot"))
    assert nike.trend is not None and nike.trend.direction in ("rising", "falling", "steady")
    zara = _niche(result, "Zara")
    assert zara.hot_reason is not None and zara.hot_reason.startswith("Not hot yet: 1 of 7")
    assert zara.trend is not None and zara.trend.direction is None
    document = result.to_json()
    niche = document["niches"][0]
    for key in ("score_parts", "hot_reason", "sold_confirmed", "sold_likely", "days_note"):
        assert key in niche
    assert niche["niche"]["label"] == result.niches[0].label
    assert document["currency"] == "EUR"


def test_confirmed_and_likely_sales_are_counted_per_niche() -> None:
    h = History()
    for i in range(6):
        h.listing(
            listed_days_ago=20, sold_days_ago=10, sold_by="detail_api" if i < 4 else "absence"
        )
    for include in (False, True):
        niche = _run(h, include_likely_sales=include).niches[0]
        assert (niche.sold_confirmed, niche.sold_likely) == (4, 2)
        assert niche.sold == (6 if include else 4)


def test_an_export_is_censored_at_its_last_observation_not_at_the_export() -> None:
    from .factory import export_document

    h = History()
    for _ in range(5):
        h.listing(listed_days_ago=20, seen_days_ago=20)
    document = export_document(h, exported_at=NOW + timedelta(days=50))
    data = AnalysisInput.from_export(document)
    assert data.now == NOW
    assert analyse(data).window.days == pytest.approx(20.0)
