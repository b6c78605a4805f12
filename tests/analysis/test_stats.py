"""Wilson intervals, grouped quantiles and Kaplan-Meier against hand-computed values."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from engine.analysis import kaplan_meier, wilson
from engine.analysis._stats import group_mean, grouped_quantiles, shrink


def test_wilson_matches_hand_computed_interval() -> None:
    # 8/10, z = 1.96: p=0.8, centre=(0.8+0.19208)/1.38416, spread=1.96*sqrt(0.016+0.009604)/1.38416
    low, high = wilson(np.array([8, 0, 0]), np.array([10, 10, 0]))
    assert low[0] == pytest.approx(0.4902, abs=2e-4)
    assert high[0] == pytest.approx(0.9433, abs=2e-4)
    assert low[1] == 0.0
    assert high[1] == pytest.approx(0.2775, abs=2e-4)
    assert math.isnan(low[2]) and math.isnan(high[2])


def test_kaplan_meier_with_censoring() -> None:
    # Sold at 2, 4, 5 days; censored (unsold/deleted) at 3 and 6.
    # t=2: 5 at risk, 1 sold -> 0.8; t=4: 3 at risk -> 0.8*2/3; t=5: 2 at risk -> *1/2.
    exit_ = np.array([2.0, 3.0, 4.0, 5.0, 6.0])
    sold = np.array([True, False, True, True, False])
    km = kaplan_meier(np.zeros(5, np.int64), np.zeros(5), exit_, sold, 1)
    time, survival, at_risk, events = km.curve(0)
    assert time.tolist() == [2.0, 4.0, 5.0]
    assert at_risk.tolist() == [5, 3, 2]
    assert events.tolist() == [1, 1, 1]
    assert survival == pytest.approx([0.8, 0.8 * 2 / 3, 0.8 * 2 / 3 / 2])
    assert km.median[0] == 5.0  # first time the curve is at or under one half


def test_kaplan_meier_median_unknown_when_curve_stays_above_half() -> None:
    km = kaplan_meier(
        np.zeros(4, np.int64),
        np.zeros(4),
        np.array([1.0, 2.0, 3.0, 4.0]),
        np.array([True, False, False, False]),
        1,
    )
    assert km.curve(0)[1].tolist() == [0.75]
    assert math.isnan(km.median[0])


def test_kaplan_meier_delayed_entry_and_groups_are_independent() -> None:
    # Group 0: A listed at 0 sold at 2; B first seen at age 3, sold at 5; C censored at 10.
    # At t=2 only A and C are at risk (B was not observed yet): 1 - 1/2 = 0.5.
    # Group 1: two sold at 1 and 3 -> 0.5 at 1, 0 at 3.
    group = np.array([0, 0, 0, 1, 1])
    entry = np.array([0.0, 3.0, 0.0, 0.0, 0.0])
    exit_ = np.array([2.0, 5.0, 10.0, 1.0, 3.0])
    sold = np.array([True, True, False, True, True])
    km = kaplan_meier(group, entry, exit_, sold, 3)
    t0, s0, n0, _ = km.curve(0)
    assert t0.tolist() == [2.0, 5.0] and n0.tolist() == [2, 2]
    assert s0 == pytest.approx([0.5, 0.25])
    assert km.median[0] == 2.0
    t1, s1, _, _ = km.curve(1)
    assert t1.tolist() == [1.0, 3.0] and s1 == pytest.approx([0.5, 0.0])
    assert km.median[1] == 1.0
    assert len(km.curve(2)[0]) == 0 and math.isnan(km.median[2])


def test_kaplan_meier_median_at_exactly_half_after_many_groups() -> None:
    # 30,000 groups of 3 listings, 2 sold at days 1, 2 and one unsold at 3; then the last
    # group: 10 at risk, 5 sold at days 1..5 (9/10 x 8/9 x 7/8 x 6/7 x 5/6 = 1/2 exactly), 5
    # unsold. Its median is day 5 whatever came before: the other groups' log factors must not
    # leak rounding into it (one running sum over all groups put this survival 4e-12 above
    # 0.5, past the 1e-12 tolerance, and the median was lost).
    before = 30_000
    group = np.concatenate([np.repeat(np.arange(before), 3), np.full(10, before)])
    exit_ = np.concatenate([np.tile([1.0, 2.0, 3.0], before), np.arange(1.0, 11.0)])
    sold = np.concatenate([np.tile([True, True, False], before), np.arange(10) < 5])
    km = kaplan_meier(group, np.zeros(len(group)), exit_, sold, before + 1)
    assert km.median[before] == 5.0
    assert km.curve(before)[1][-1] == pytest.approx(0.5, abs=1e-15)
    assert km.median[0] == 2.0 and km.curve(0)[1] == pytest.approx([2 / 3, 1 / 3])


def test_grouped_quantiles_match_statistics_module() -> None:
    rng = np.random.default_rng(3)
    group = rng.integers(0, 4, 200)
    values = np.round(rng.uniform(1, 90, 200), 2)
    values[::17] = np.nan
    counts, q = grouped_quantiles(group, values, 5, (0.5, 0.25, 0.75))
    for g in range(4):
        mine = sorted(v for v, gg in zip(values, group, strict=True) if gg == g and v == v)
        assert counts[g] == len(mine)
        assert q[0, g] == pytest.approx(statistics.median(mine))
        q1, _, q3 = statistics.quantiles(mine, n=4, method="inclusive")
        assert (q[1, g], q[2, g]) == pytest.approx((q1, q3))
    assert counts[4] == 0 and np.isnan(q[:, 4]).all()


def test_group_mean_and_shrink_towards_it() -> None:
    values = np.array([10.0, 20.0, np.nan, 7.0])
    weights = np.array([1, 3, 0, 2])
    groups = np.array([0, 0, 0, 1])
    # Group 0: (1x10 + 3x20) / 4 = 17.5, the NaN with weight 0 takes no part; group 1: 7.
    target = group_mean(values, weights, groups)
    assert target.tolist() == [17.5, 17.5, 17.5, 7.0]
    assert np.isnan(group_mean(values, np.zeros(4), groups)).all()
    # (w x + m t) / (w + m), m = 2: (10 + 35) / 3, (60 + 35) / 5, the prior alone where w = 0,
    # and a unit that is its group's only one keeps its value.
    shrunk = shrink(values, weights, target, 2.0)
    assert shrunk.tolist() == pytest.approx([15.0, 19.0, 17.5, 7.0])
    # No prior (NaN target): the estimate stands, NaN included.
    kept = shrink(values, weights, np.full(4, np.nan), 2.0)
    assert kept[[0, 1, 3]].tolist() == [10.0, 20.0, 7.0] and np.isnan(kept[2])
