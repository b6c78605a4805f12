"""The analysis's shortcuts against the plain numpy they replace (same answers, both paths)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analysis._flow import DAY, _floor_days
from engine.analysis._frame import _latest, _rows_of
from engine.analysis._niches import _dense
from engine.analysis._stats import group_order


@pytest.mark.parametrize("span", [10, 10**12])  # counted, then too sparse: np.unique
def test_dense_is_unique_with_inverse(span: int) -> None:
    keys = np.random.default_rng(1).integers(-span, span, 5000)
    distinct, inverse = _dense(keys)
    want, want_inverse = np.unique(keys, return_inverse=True)
    assert np.array_equal(distinct, want) and np.array_equal(inverse, want_inverse)
    assert len(_dense(np.zeros(0, np.int64))[0]) == 0


@pytest.mark.parametrize("n_groups", [1, 3, 70_000, 5_000_000])  # one to three radix passes
def test_group_order_is_a_stable_argsort(n_groups: int) -> None:
    group = np.random.default_rng(2).integers(0, n_groups, 20_000)
    assert np.array_equal(group_order(group, n_groups), np.argsort(group, kind="stable"))


@pytest.mark.parametrize("shuffle", [False, True])
def test_rows_of_finds_each_item(shuffle: bool) -> None:
    rng = np.random.default_rng(3)
    ids = np.arange(1, 2001, dtype=np.int64) * 3
    if shuffle:
        ids = rng.permutation(ids)
    items = rng.integers(0, 7000, 10_000)
    row = _rows_of(ids, items)
    assert np.array_equal(ids[row] == items, np.isin(items, ids))


@pytest.mark.parametrize("offset", [1.74e9, -5.0])  # int64 bit patterns, then plain floats
def test_latest_is_the_max_per_row(offset: float) -> None:
    rng = np.random.default_rng(4)
    row = rng.integers(0, 50, 400)
    at = offset + rng.integers(0, 30, 400) * 0.5
    want = np.full(60, -np.inf)
    np.maximum.at(want, row, at)
    assert np.array_equal(_latest(row, at, 60), want)


def test_floor_days_is_floor_division() -> None:
    rng = np.random.default_rng(5)
    day = rng.integers(-30_000, 30_000, 10_000) * DAY
    times = np.concatenate(
        [day, np.nextafter(day, -np.inf), np.nextafter(day, np.inf), rng.uniform(-3e9, 3e9, 10_000)]
    )
    assert np.array_equal(_floor_days(times), (times // DAY).astype(np.int64))
