"""Monitors of one search poll on one grid (`engine/monitors/_schedule.py`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from engine.monitors._schedule import MIN_GAP_SHARE, SPREAD_CAP_SECONDS, next_tick

URL = "https://www.example-market.test/catalog?catalog[]=5&order=newest_first"
START = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


@given(
    offset=st.floats(min_value=0, max_value=86_400 * 30),
    interval=st.sampled_from([1, 2, 30, 60, 300, 900, 3600]),
    member=st.sampled_from(["", "mon_a", "mon_b"]),
)
def test_the_next_tick_keeps_the_gap_and_comes_within_an_interval(
    offset: float, interval: int, member: str
) -> None:
    after = START + timedelta(seconds=offset)
    tick = next_tick(after, interval, URL, member)
    gap = (tick - after).total_seconds()
    assert MIN_GAP_SHARE * interval - 1e-3 <= gap <= (1 + MIN_GAP_SHARE) * interval + 1e-3
    # On the grid: a poll ending anywhere before the tick's gap is scheduled to that tick again.
    before = tick - timedelta(seconds=MIN_GAP_SHARE * interval + 0.01)
    assert abs((next_tick(before, interval, URL, member) - tick).total_seconds()) < 1e-3


def test_monitors_of_one_search_meet_whatever_their_phases_and_intervals() -> None:
    # Two grids of one search, first polled 17 s apart, one every 60 s, one every 300 s:
    # from their second poll on, every tick of the slower one is a tick of the faster.
    fast, slow = [START], [START + timedelta(seconds=17)]
    for _ in range(30):
        fast.append(next_tick(fast[-1] + timedelta(seconds=3), 60, URL))
    for _ in range(5):
        slow.append(next_tick(slow[-1] + timedelta(seconds=3), 300, URL))
    assert set(slow[1:]) <= set(fast[1:])


def test_the_monitors_of_a_tick_poll_within_a_tenth_of_an_interval_of_it() -> None:
    # Fifty monitors of one search: each a little after the tick (their writes spread), all
    # well within the reuse window of the first one's fetch.
    for interval in (2, 60, 300, 3600):
        grid = next_tick(START, interval, URL)
        polls = [next_tick(START, interval, URL, f"mon_{n}") for n in range(50)]
        # Each after the grid's tick before it (the gap may put some on the tick before).
        late = [round((at - grid).total_seconds() % interval, 6) for at in polls]
        assert all(0 <= s <= min(0.1 * interval, SPREAD_CAP_SECONDS) for s in late), late
        assert len(set(late)) == 50


def test_other_searches_are_spread_over_the_clock() -> None:
    ticks = {
        next_tick(START, 3600, URL.replace("catalog[]=5", f"catalog[]={n}")) for n in range(20)
    }
    assert len(ticks) == 20
