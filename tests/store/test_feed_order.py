"""Places in the feed's publication order (`listings.feed_rank`): a poll writes the ranks the
engine gives, and `feed_order` reads back what the next poll judges its window by, on both
databases."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import timedelta

from engine import decide_poll
from store import ConfirmedState, ObservedListing, PollOutcome, Store
from tests.conftest import new_monitor


async def _poll(
    store: Store,
    monitor_id: str,
    minute: int,
    seen: list[ObservedListing],
    ranks: Mapping[int, int],
    confirmed: tuple[ConfirmedState, ...] = (),
) -> None:
    at = store.clock() + timedelta(minutes=minute)
    outcome = PollOutcome(
        poll_id=f"poll_{uuid.uuid4().hex}",
        started_at=at,
        finished_at=at,
        pages=1,
        seen=tuple(seen),
        confirmed=confirmed,
        next_poll_at=at + timedelta(minutes=1),
        ranks=ranks,
    )
    await store.monitors.record_poll(monitor_id, outcome, decide=decide_poll)


async def test_ranks_are_written_as_given_and_read_back_for_the_next_poll(store: Store) -> None:
    monitor = await new_monitor(store)
    before = await store.monitors.feed_order(monitor.id, [1, 2])
    assert (before.live, before.ranks, before.lowest, before.highest) == ({}, {}, None, None)

    seen = [
        ObservedListing(5, category_id=4),
        ObservedListing(9, category_id=4),
        ObservedListing(7, promoted=True),  # only promoted: no place given
        ObservedListing(3, category_id=8),
    ]
    await _poll(store, monitor.id, 0, seen, {5: 3 << 20, 9: 2 << 20, 3: 1 << 20})
    order = await store.monitors.feed_order(monitor.id, [])
    assert set(order.live) == {3, 5, 7, 9}
    assert (order.live[9].feed_rank, order.live[9].category_id) == (2 << 20, 4)
    assert order.live[7].feed_rank is None
    assert order.ranks == {5: 3 << 20, 9: 2 << 20, 3: 1 << 20}
    assert (order.lowest, order.highest) == (1 << 20, 3 << 20)

    # 9 is sold (no longer live); 7 is seen organically and placed; 5 placed again.
    sold = (ConfirmedState(9, "sold", "item_page"),)
    await _poll(store, monitor.id, 1, [ObservedListing(7), ObservedListing(5)], {7: -5, 5: 9}, sold)
    order = await store.monitors.feed_order(monitor.id, [9, 42])
    assert set(order.live) == {3, 5, 7}
    assert order.ranks == {5: 9, 7: -5, 3: 1 << 20, 9: 2 << 20}  # a feed's sold 9 included
    assert (order.lowest, order.highest) == (-5, 2 << 20)
    assert (await store.monitors.feed_order(monitor.id, [])).ranks.keys() == {3, 5, 7}
