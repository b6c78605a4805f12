"""The market's clock stamps what a monitor sees: believed while it behaves (first reading near
ours, never backwards, never absurdly fast), continued at our rate when it does not, and the
analysis reads durations and gaps on it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine.analysis import PollRow, poll_marks
from engine.analysis._columns import epoch
from engine.monitors._clock import FIRST_AHEAD, FIRST_BEHIND, MAX_RATE, stamp_poll
from engine.monitors._poll import poll_once
from store import PollRecord, Store
from tests.conftest import new_monitor

from .fake_market import FakeMarket

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)


def _last(market_at: datetime | None, ended: datetime, clock: str | None) -> PollRecord:
    return PollRecord(
        id="poll_x", monitor_id="mon_x", started_at=ended - MINUTE / 10, finished_at=ended,
        pages=1, items=1, new=0, changed=0, confirmed=0, duration_ms=0, error=None,
        market_at=market_at, clock=clock,
    )  # fmt: skip


def test_a_first_reading_near_ours_is_believed_a_wrong_one_is_not() -> None:
    assert stamp_poll(NOW + 3 * MINUTE, NOW, None).clock == "market"
    assert stamp_poll(NOW + 3 * MINUTE, NOW, None).at == NOW + 3 * MINUTE
    # An accelerated simulator that started a few simulated days before the first poll.
    assert stamp_poll(NOW + timedelta(days=20), NOW, None).clock == "market"
    # A simulated market two years behind, days behind, a year ahead, or no reading: ours.
    for reading in (
        NOW - timedelta(days=700), NOW - FIRST_BEHIND * 2, NOW + FIRST_AHEAD * 2, None
    ):  # fmt: skip
        stamp = stamp_poll(reading, NOW, None)
        assert (stamp.at, stamp.clock) == (NOW, "service")
    # A monitor that started on our clock stays there unless the market's agrees with it.
    on_ours = _last(None, NOW - MINUTE, "service")
    assert stamp_poll(NOW + FIRST_AHEAD * 2, NOW, on_ours).clock == "service"
    assert stamp_poll(NOW + MINUTE, NOW, on_ours).clock == "market"


def test_an_accelerated_market_is_followed_a_misbehaving_one_is_continued() -> None:
    last = _last(NOW + 10 * HOUR, NOW - MINUTE, "market")
    # Sixty times faster than ours: a minute here is an hour there, and so it is stamped.
    fast = stamp_poll(NOW + 11 * HOUR, NOW, last)
    assert (fast.at, fast.clock, fast.extrapolated) == (NOW + 11 * HOUR, "market", False)
    # Backwards (a cached answer's stale Date), absurdly fast (a year in a minute), or
    # silent: the market's clock continues from the last poll at our rate.
    for reading in (NOW + 9 * HOUR, NOW + MINUTE * MAX_RATE * 2 + 10 * HOUR, None):
        stamp = stamp_poll(reading, NOW, last)
        assert (stamp.at, stamp.clock, stamp.extrapolated) == (
            NOW + 10 * HOUR + MINUTE,
            "market",
            True,
        )


def test_failed_polls_sit_on_the_market_clock_between_their_neighbours() -> None:
    rows = [
        PollRow(NOW, NOW + 100 * HOUR, None, "market"),
        PollRow(NOW + MINUTE, None, "HTTP 429", None),  # failed polls read no clock
        PollRow(NOW + 2 * MINUTE, NOW + 102 * HOUR, None, "market"),
        PollRow(NOW + 3 * MINUTE, None, "timed out", None),
    ]
    marks = poll_marks(reversed(rows))
    assert [m.at for m in marks] == [
        epoch(NOW + 100 * HOUR),
        epoch(NOW + 101 * HOUR),  # halfway on the market's clock too
        epoch(NOW + 102 * HOUR),
        epoch(NOW + 102 * HOUR + MINUTE),  # past the last, at our rate
    ]
    assert [m.ok for m in marks] == [True, False, True, False]
    assert marks[1].why == "blocked" and marks[3].why == "timed out"


def test_on_our_clock_a_poll_is_stamped_when_it_ended() -> None:
    # What a poll saw was there by its end: a listing born while a slow poll ran must not be
    # stamped before it existed.
    assert stamp_poll(None, NOW + MINUTE, None).at == NOW + MINUTE


async def test_a_monitor_stamps_listings_and_sales_on_the_market_clock(store: Store) -> None:
    monitor = await new_monitor(store)
    market = FakeMarket()
    for item_id in (101, 102):
        market.list(item_id)

    async def poll(minute: int, market_hours: float | None) -> PollRecord:
        market.market_time = None if market_hours is None else NOW + market_hours * HOUR
        return await poll_once(store, market, monitor, now=NOW + minute * MINUTE)

    first = await poll(0, 0.0)
    assert (first.clock, first.market_at) == ("market", NOW)
    market.states[101] = "sold"
    await poll(1, 60.0)  # the market runs an hour a minute
    market.list(103)
    silent = await poll(2, None)  # an answer without a clock: continued at our rate
    continued = NOW + 60 * HOUR + MINUTE  # give or take the polls' own few milliseconds
    assert silent.clock == "market" and silent.market_at is not None
    assert abs(silent.market_at - continued) < timedelta(seconds=1)

    listings = {x.item_id: x async for x in store.monitors.iter_listings(monitor.id)}
    assert listings[101].state == "sold"
    assert listings[101].first_seen_at == NOW
    assert listings[101].state_changed_at == NOW + 60 * HOUR  # sold within 2.5 market days
    assert listings[103].first_seen_at == silent.market_at
    sales = [e async for e in store.monitors.iter_events(monitor.id) if e.to_state == "sold"]
    assert [e.at for e in sales] == [NOW + 60 * HOUR]
    # The monitor's own schedule stays on ours.
    record = await store.monitors.get(monitor.id, monitor.workspace_id)
    assert record is not None and record.last_poll_at is not None
    assert record.last_poll_at - NOW < 10 * MINUTE
