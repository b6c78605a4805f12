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

# A simulated month: a soak run (`make soak`, CI), not part of `make test`.
pytestmark = pytest.mark.soak


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    path = tmp_path / "accuracy.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


async def test_a_simulated_month_finds_the_planted_hot_niches(
    settings: Settings, nursery: trio.Nursery
) -> None:
    # Twelve simulated hours per second: a month in about a minute of real time, polls every
    # ~1-1.5 simulated days (each poll costs ~2-3 s of this one-process CPU; faster speeds
    # make polls span days and blur what each one saw: at sixteen hours per second a busy
    # machine polled 14 times in the month and flagged 4 hot pairs; at twelve, with both
    # cores loaded by other work, 22 polls and 8 flagged). Seed 1: precision@10 is
    # seed-dependent (0.7-1.0 over seeds 1-8 in an offline replay of one monitored month per
    # seed, mean 0.90; 0.7-0.9, mean 0.83, before thin niches were shrunk towards their
    # (category, brand)), because the score ranks by profit per listing-day and an expensive
    # ordinary (category, brand) can outrank a cheap hot one; seed 1 scored 1.0 (0.9 before),
    # and 0.9 since each category has its own brands, sizes and price level (issue 32: the
    # world was drawn anew, its hot niches dealt across categories).
    result = await measure(nursery, settings, Scenario(seed=1, speed=43_200.0, days=30.0))
    print("\n".join(result.lines()))

    assert result.simulated_days >= 29.5
    assert result.polls >= 6 and result.sold_recorded > 500
    # What the monitor recorded happened in the marketplace.
    assert result.false_sales == ()
    assert result.false_transitions == 0
    # Detection: the target, and far above picking pairs at random.
    assert result.precision >= 0.8, (result.top_pairs, sorted(result.hot))
    assert result.random_baseline < 0.3
    # The `hot` flags (what deal alerts hang on) name planted hot niches. How many of the ten
    # they find moves with the polls' timing: 3 to 10 in earlier worlds of this seed, 5 to 9
    # in seven runs of today's (a 45-day market; alone and two at once: 5, 7, 7, 7, 7, 8, 9),
    # so the floor is the lowest seen; precision is the steady figure (every flagged pair was
    # planted hot in each of those runs but one, 8 of 9).
    assert len(result.flagged) >= 3 and result.flag_precision >= 0.8, (
        sorted(result.flagged),
        sorted(result.hot),
    )
    # Per-niche figures close to the truth over the same window and definitions.
    assert len(result.niches) >= 55 and result.priced_niches >= 55
    # The monitor's own figures match the truth of the listings it saw ...
    assert result.mae_sell_through_seen < 0.12
    assert result.mae_median_sold_seen < 2.0
    # ... and the market's, up to what polls days apart cannot see (listings born and sold
    # between two polls).
    assert result.mae_sell_through < 0.2
    assert result.mean_relative_median_sold < 0.12
    # Days to sell on the market's clock, not squeezed by the simulator's speed (the 20%
    # target is held by the test below, whose polls are hours apart; here they are days
    # apart, and further on a busy machine, which blurs when a listing appeared and sold).
    days_error = result.days_relative_error()
    assert len(result.timed()) >= 20 and days_error is not None and days_error <= 0.3


async def test_days_to_sell_match_the_simulators_truth_on_the_products_own_output(
    settings: Settings, nursery: trio.Nursery
) -> None:
    # Days to sell need polls close together (the planted hot niches sell in about a day and
    # a half): four simulated hours per second over a smaller market, polls a few
    # simulated hours apart, five simulated days watched. The listings already on sale at the first
    # poll are of unknown age and stay out of time to sell; the rest were listed while
    # watched (between two polls), so their days to sell are the market's.
    result = await measure(
        nursery,
        settings,
        Scenario(seed=2, speed=14_400.0, days=5.0, n_listings=200, arrivals_per_day=240.0),
    )
    print("\n".join(result.lines()))
    assert result.false_sales == ()
    assert len(result.timed()) >= 4, result.niches
    error = result.days_relative_error()
    assert error is not None and error <= 0.20, [
        (n.kind, n.sales, n.km_median_days, n.seen_km_median_days) for n in result.timed()
    ]
