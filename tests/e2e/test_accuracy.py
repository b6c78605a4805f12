"""Accuracy of niche detection against the simulator's ground truth, end to end: a month of
simulated market watched by a monitor of the real service, analysed over REST.

How the figures are defined (niche = (category, brand), clocks, windows): tests/e2e/accuracy.py.
SQLite only: the store's backend does not change what is detected, the monitor's behaviour on
PostgreSQL is covered by test_monitor_simulator.py, and a second 40-second run would not pay.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import trio

from api.settings import Settings
from tests.e2e.accuracy import Scenario, measure


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    path = tmp_path / "accuracy.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


async def test_a_simulated_month_finds_the_planted_hot_niches(
    settings: Settings, nursery: trio.Nursery
) -> None:
    # One simulated day per second: a month in about 30 s of real time.
    result = await measure(nursery, settings, Scenario(seed=3, speed=86_400.0, days=30.0))
    print("\n".join(result.lines()))

    assert result.simulated_days >= 29.5
    assert result.polls >= 15 and result.sold_recorded > 500
    # What the monitor recorded happened in the marketplace.
    assert result.false_sales == ()
    assert result.false_transitions == 0
    # Detection: the target, and far above picking pairs at random.
    assert result.precision >= 0.8, (result.top_pairs, sorted(result.hot))
    assert result.random_baseline < 0.3
    # Per-niche figures close to the truth over the same window and definitions.
    assert len(result.niches) >= 55 and result.priced_niches >= 55
    assert result.mae_sell_through < 0.08
    assert result.mean_relative_median_sold < 0.08
