"""The monitor repository: poll application, idempotency, scoping, paging, streaming."""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest

from engine import decide_poll
from store import LISTING_STATES, ConfirmedState, ObservedListing, PollOutcome, Store
from store.monitors import listing_pages
from tests.conftest import new_monitor
from tests.store.poll_helpers import failed_poll


async def _monitor(store: Store) -> tuple[str, str]:
    monitor = await new_monitor(store)
    return monitor.id, monitor.workspace_id


def _outcome(
    store: Store, seen: list[ObservedListing], confirmed: list[ConfirmedState], minutes: int = 0
) -> PollOutcome:
    at = store.clock() + timedelta(minutes=minutes)
    return PollOutcome(
        poll_id=f"poll_{uuid.uuid4().hex}",
        started_at=at,
        finished_at=at,
        pages=1,
        seen=tuple(seen),
        confirmed=tuple(confirmed),
        next_poll_at=at + timedelta(minutes=1),
    )


async def _events(store: Store, monitor_id: str) -> list[tuple[int, str, str | None, str | None]]:
    return [
        (e.item_id, e.kind, e.from_state, e.to_state)
        async for e in store.monitors.iter_events(monitor_id)
    ]


async def test_first_poll_bootstraps_and_activates(store: Store) -> None:
    monitor_id, workspace_id = await _monitor(store)
    seen = [ObservedListing(item_id=i, price=Decimal("10.00"), favourites=1) for i in (1, 2, 3)]
    poll = await store.monitors.record_poll(
        monitor_id, _outcome(store, seen, []), decide=decide_poll
    )
    assert (poll.items, poll.new, poll.changed) == (3, 3, 0)
    monitor = await store.monitors.get(monitor_id, workspace_id)
    assert monitor is not None and monitor.status == "active" and monitor.bootstrapped_at
    assert monitor.polls == 1
    assert await store.monitors.state_counts(monitor_id) == {
        "open": 3,
        "reserved": 0,
        "sold": 0,
        "deleted": 0,
    }


async def test_transitions_and_replay_write_nothing_twice(store: Store) -> None:
    monitor_id, _ = await _monitor(store)
    listing = ObservedListing(item_id=7, price=Decimal("10.00"), favourites=1)
    await store.monitors.record_poll(monitor_id, _outcome(store, [listing], []), decide=decide_poll)
    cheaper = ObservedListing(item_id=7, price=Decimal("8.50"), favourites=3)
    reserved = _outcome(store, [cheaper, ObservedListing(item_id=8)], [], minutes=1)
    await store.monitors.record_poll(monitor_id, reserved, decide=decide_poll)
    gone = _outcome(store, [ObservedListing(item_id=8)], [ConfirmedState(7, "reserved")], minutes=2)
    await store.monitors.record_poll(monitor_id, gone, decide=decide_poll)
    # Replaying the same poll (same id) and the same observation (new id) change nothing.
    await store.monitors.record_poll(monitor_id, gone, decide=decide_poll)
    again = _outcome(
        store, [ObservedListing(item_id=8)], [ConfirmedState(7, "reserved")], minutes=3
    )
    assert (await store.monitors.record_poll(monitor_id, again, decide=decide_poll)).changed == 0
    back = _outcome(store, [ObservedListing(item_id=7)], [ConfirmedState(8, "sold")], minutes=4)
    await store.monitors.record_poll(monitor_id, back, decide=decide_poll)
    # A sold listing stays sold even if something later says otherwise.
    late = _outcome(store, [], [ConfirmedState(8, "deleted")], minutes=5)
    await store.monitors.record_poll(monitor_id, late, decide=decide_poll)
    assert await _events(store, monitor_id) == [
        (7, "new", None, "open"),
        (7, "price", None, None),
        (7, "counts", None, None),
        (8, "new", None, "open"),
        (7, "state", "open", "reserved"),
        (7, "state", "reserved", "open"),
        (8, "state", "open", "sold"),
    ]
    polls = [p async for p in store.monitors.iter_polls(monitor_id)]
    assert len(polls) == 6
    assert await store.monitors.known_live_listings(monitor_id) == {7}


async def test_errors_count_and_stop_the_monitor(store: Store) -> None:
    monitor_id, workspace_id = await _monitor(store)
    for n in range(3):
        record = await failed_poll(
            store, monitor_id, "blocked (403)", max_consecutive=3, poll_id=f"err_{monitor_id}_{n}"
        )
        assert record is not None
    assert record.status == "error" and record.consecutive_errors == 3
    assert record.last_error == "blocked (403)"
    await store.monitors.set_status(monitor_id, "active", reset_errors=True)
    monitor = await store.monitors.get(monitor_id, workspace_id)
    assert monitor is not None and monitor.consecutive_errors == 0 and monitor.total_errors == 3


async def test_scoping_paging_and_delete(store: Store) -> None:
    monitor_id, workspace_id = await _monitor(store)
    _, other_workspace = await _monitor(store)
    seen = [ObservedListing(item_id=i) for i in range(1, 26)]
    await store.monitors.record_poll(monitor_id, _outcome(store, seen, []), decide=decide_poll)
    assert await store.monitors.get(monitor_id, other_workspace) is None
    first = await store.monitors.listings(monitor_id, ["open"], page=1, page_size=10)
    third = await store.monitors.listings(monitor_id, None, page=3, page_size=10)
    assert first.total == 25 and [x.item_id for x in first.listings] == list(range(1, 11))
    assert [x.item_id for x in third.listings] == list(range(21, 26))
    streamed = [x.item_id async for x in store.monitors.iter_listings(monitor_id, batch=7)]
    assert streamed == list(range(1, 26))
    assert await store.monitors.delete(monitor_id, other_workspace) is False
    assert await store.monitors.delete(monitor_id, workspace_id) is True
    assert await store.monitors.get(monitor_id, workspace_id) is None
    assert await store.monitors.listings(monitor_id, None, 1, 10) is None


async def _counted(store: Store, monitor_id: str) -> dict[str, int]:
    """Listings per state counted the slow way, to check the counts kept on the monitor."""
    counts = {state: 0 for state in LISTING_STATES}
    async for listing in store.monitors.iter_listings(monitor_id):
        counts[listing.state] += 1
    return counts


async def test_state_counts_follow_every_transition(store: Store) -> None:
    monitor_id, _ = await _monitor(store)
    rng = random.Random(5)
    live: set[int] = set()
    for minute in range(12):
        fresh = [ObservedListing(item_id=minute * 100 + i) for i in range(rng.randint(0, 9))]
        gone = rng.sample(sorted(live), k=min(len(live), rng.randint(0, 4)))
        back = rng.sample(sorted(live - set(gone)), k=min(len(live - set(gone)), 2))
        confirmed = [ConfirmedState(i, rng.choice(LISTING_STATES[1:])) for i in gone]
        seen = fresh + [ObservedListing(item_id=i) for i in back]
        outcome = _outcome(store, seen, confirmed, minutes=minute)
        await store.monitors.record_poll(monitor_id, outcome, decide=decide_poll)
        await store.monitors.record_poll(
            monitor_id, outcome, decide=decide_poll
        )  # a replay moves nothing
        live |= {x.item_id for x in fresh}
        assert await store.monitors.state_counts(monitor_id) == await _counted(store, monitor_id)
    assert sum((await store.monitors.state_counts(monitor_id)).values()) == len(live)


async def test_deep_pages_through_bookmarks_match_plain_offset(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing_pages, "BOOKMARK_EVERY", 7)  # deep from the 8th row on
    monitor_id, _ = await _monitor(store)
    ids = random.Random(9).sample(range(1, 10_000), 130)
    seen = [ObservedListing(item_id=i) for i in ids]
    await store.monitors.record_poll(monitor_id, _outcome(store, seen, []), decide=decide_poll)
    sold = [ConfirmedState(i, "sold") for i in sorted(ids)[::3]]
    await store.monitors.record_poll(
        monitor_id, _outcome(store, [], sold, minutes=1), decide=decide_poll
    )
    truth = {
        None: sorted(ids),
        ("sold",): sorted(c.item_id for c in sold),
        ("open",): sorted(set(ids) - {c.item_id for c in sold}),
    }

    async def every_page(states: tuple[str, ...] | None, size: int) -> list[int]:
        got: list[int] = []
        for page in range(1, len(ids) // size + 3):
            result = await store.monitors.listings(monitor_id, states, page, size)
            assert result.total == len(truth[states])
            got += [x.item_id for x in result.listings]
        return got

    for states, expected in truth.items():
        for size in (1, 5, 50):
            assert await every_page(states, size) == expected
    # A poll moves rows between pages: the next read takes fresh bookmarks, not stale ones.
    newcomers = [ObservedListing(item_id=i) for i in (0, 10_001, 10_002)]
    await store.monitors.record_poll(
        monitor_id, _outcome(store, newcomers, [], minutes=2), decide=decide_poll
    )
    truth[None] = sorted([*ids, 0, 10_001, 10_002])
    assert await every_page(None, 5) == truth[None]
    far = await store.monitors.listings(monitor_id, None, page=10**12, page_size=200)
    assert far.listings == [] and far.total == len(ids) + 3
