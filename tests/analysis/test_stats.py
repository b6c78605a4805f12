"""Wilson intervals, grouped quantiles and Kaplan-Meier against hand-computed values."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from engine.analysis import kaplan_meier, wilson
from engine.analysis._stats import grouped_quantiles


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
