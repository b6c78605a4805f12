"""Monitors of one search poll on one grid (`engine/monitors/_schedule.py`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from engine.monitors._schedule import MIN_GAP_SHARE, next_tick

URL = "https://www.example-market.test/catalog?catalog[]=5&order=newest_first"
START = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


@given(
    offset=st.floats(min_value=0, max_value=86_400 * 30),
    interval=st.sampled_from([1, 2, 30, 60, 300, 900, 3600]),
)
def test_the_next_tick_keeps_the_gap_and_comes_within_an_interval(
    offset: float, interval: int
) -> None:
    after = START + timedelta(seconds=offset)
    tick = next_tick(after, interval, URL)
    gap = (tick - after).total_seconds()
    assert MIN_GAP_SHARE * interval - 1e-3 <= gap <= (1 + MIN_GAP_SHARE) * interval + 1e-3
    # On the grid: a poll ending anywhere before the tick's gap is scheduled to that tick again.
    again = next_tick(tick - timedelta(seconds=MIN_GAP_SHARE * interval + 0.01), interval, URL)
    assert abs((again - tick).total_seconds()) < 1e-3


def test_monitors_of_one_search_meet_whatever_their_phases_and_intervals() -> None:
    # Two monitors of one search, first polled 17 s apart, one every 60 s, one every 300 s:
    # from their second poll on, every poll of the slower one falls on a poll of the faster.
    fast, slow = [START], [START + timedelta(seconds=17)]
    for _ in range(30):
        fast.append(next_tick(fast[-1] + timedelta(seconds=3), 60, URL))
    for _ in range(5):
        slow.append(next_tick(slow[-1] + timedelta(seconds=3), 300, URL))
    assert set(slow[1:]) <= set(fast[1:])


def test_other_searches_are_spread_over_the_clock() -> None:
    ticks = {
        next_tick(START, 3600, URL.replace("catalog[]=5", f"catalog[]={n}")) for n in range(20)
    }
    assert len(ticks) == 20
