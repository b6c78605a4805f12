"""Evidence of state changes, likely sales by absence, today's listing fields, failed-poll
kinds and the market profile memory, on both databases."""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from decimal import Decimal

from engine import decide_poll
from store import (
    EVIDENCE_KINDS,
    LISTING_STATES,
    ConfirmedState,
    ObservedListing,
    PollOutcome,
    Store,
)
from tests.conftest import new_monitor
from tests.store.poll_helpers import failed_poll, todays_listing


async def _monitor(store: Store) -> tuple[str, str]:
    monitor = await new_monitor(store, url="https://www.vinted.it/catalog")
    return monitor.id, monitor.workspace_id


class Polls:
    """Successive polls of one monitor, a minute apart."""

    def __init__(self, store: Store, monitor_id: str) -> None:
        self.store, self.monitor_id, self.minute = store, monitor_id, 0

    async def __call__(
        self,
        seen: list[int | ObservedListing] = [],  # noqa: B006  (never mutated)
        confirmed: list[ConfirmedState] = [],  # noqa: B006
        absent: list[int] = [],  # noqa: B006
        unknown: list[int] = [],  # noqa: B006
    ) -> PollOutcome:
        at = self.store.clock() + timedelta(minutes=self.minute)
        self.minute += 1
        outcome = PollOutcome(
            poll_id=f"poll_{uuid.uuid4().hex}",
            started_at=at,
            finished_at=at,
            pages=1,
            seen=tuple(s if isinstance(s, ObservedListing) else ObservedListing(s) for s in seen),
            confirmed=tuple(confirmed),
            next_poll_at=at + timedelta(minutes=1),
            absent=tuple(absent),
            likely_after=3,
            unknown=tuple(unknown),
        )
        await self.store.monitors.record_poll(self.monitor_id, outcome, decide=decide_poll)
        return outcome


async def _listing(store: Store, monitor_id: str, item_id: int) -> tuple[str, str | None, int]:
    found = [x async for x in store.monitors.iter_listings(monitor_id) if x.item_id == item_id]
    return found[0].state, found[0].state_evidence, found[0].absent_polls


async def _state_events(store: Store, monitor_id: str) -> list[tuple[object, ...]]:
    return [
        (e.item_id, e.from_state, e.to_state, e.evidence)
        async for e in store.monitors.iter_events(monitor_id)
        if e.kind == "state"
    ]


async def test_absence_makes_a_likely_sale_that_the_feed_undoes(store: Store) -> None:
    monitor_id, _ = await _monitor(store)
    poll = Polls(store, monitor_id)
    await poll([1, 2, 3])
    await poll([3], absent=[1, 2])
    await poll([2, 3], absent=[1])
    assert await _listing(store, monitor_id, 1) == ("open", None, 2)
    assert await _listing(store, monitor_id, 2) == ("open", None, 0)  # seen: count restarts
    # Seen and absent in one poll: seen wins; a listing nobody holds is ignored.
    await poll([3], absent=[1, 3, 99])
    assert await _listing(store, monitor_id, 1) == ("sold", "absence", 3)
    assert await _listing(store, monitor_id, 3) == ("open", None, 0)
    counts = await store.monitors.listing_counts(monitor_id)
    assert counts == {"open": 2, "reserved": 0, "sold": 1, "deleted": 0, "likely_sold": 1}
    assert await store.monitors.state_counts(monitor_id) == {
        "open": 2,
        "reserved": 0,
        "sold": 1,
        "deleted": 0,
    }
    assert set((await store.monitors.feed_order(monitor_id, ())).live) == {2, 3}
    # A sold listing is no longer absent; back in the feed, a likely sale was not one.
    await poll([3], absent=[1])
    assert await _listing(store, monitor_id, 1) == ("sold", "absence", 3)
    await poll([1, 3])
    assert await _listing(store, monitor_id, 1) == ("open", None, 0)
    assert await _state_events(store, monitor_id) == [
        (1, "open", "sold", "absence"),
        (1, "sold", "open", None),
    ]
    counts = await store.monitors.listing_counts(monitor_id)
    assert counts["open"] == 3 and counts["sold"] == 0 and counts["likely_sold"] == 0


async def test_sources_confirm_upgrade_and_outrank_absence(store: Store) -> None:
    monitor_id, _ = await _monitor(store)
    poll = Polls(store, monitor_id)
    await poll([1, 2, 3, 4])
    for _ in range(3):
        await poll([4], absent=[1, 2, 3])
    assert (await store.monitors.listing_counts(monitor_id))["likely_sold"] == 3
    # A source confirms likely sale 1 (same state: the evidence is upgraded, no new event),
    # finds 2 deleted (a source outranks absence) and 3 sold from the detail API.
    await poll(
        [4],
        confirmed=[
            ConfirmedState(1, "sold", "item_page"),
            ConfirmedState(2, "deleted", "item_page"),
            ConfirmedState(3, "sold", "detail_api"),
        ],
    )
    assert await _listing(store, monitor_id, 1) == ("sold", "item_page", 0)
    assert await _listing(store, monitor_id, 2) == ("deleted", "item_page", 0)
    assert await _listing(store, monitor_id, 3) == ("sold", "detail_api", 0)
    counts = await store.monitors.listing_counts(monitor_id)
    assert (counts["sold"], counts["deleted"], counts["likely_sold"]) == (2, 1, 0)
    # A confirmed sale stays a sale, in the feed or not.
    await poll([1, 4], confirmed=[ConfirmedState(3, "open", "item_page")])
    assert await _listing(store, monitor_id, 1) == ("sold", "item_page", 0)
    assert await _listing(store, monitor_id, 3) == ("sold", "detail_api", 0)
    # A live listing confirmed by a source: its evidence, and no more absences.
    await poll([], confirmed=[ConfirmedState(4, "reserved", "detail_api")], absent=[4])
    assert await _listing(store, monitor_id, 4) == ("reserved", "detail_api", 0)
    assert await _state_events(store, monitor_id) == [
        (1, "open", "sold", "item_page"),  # the likely sales' events, upgraded in place
        (2, "open", "sold", "absence"),
        (3, "open", "sold", "detail_api"),
        (2, "sold", "deleted", "item_page"),
        (4, "open", "reserved", "detail_api"),
    ]


async def test_todays_fields_error_kinds_and_good_polls(store: Store) -> None:
    monitor_id, workspace_id = await _monitor(store)
    poll = Polls(store, monitor_id)
    assert await store.monitors.last_good_poll_items(monitor_id) is None
    await poll([todays_listing(7), 8])
    # A later sighting that lacks a field keeps what was known; `promoted` is as observed.
    await poll([ObservedListing(7, price=Decimal("12.00"))])
    page = await store.monitors.listings(monitor_id, None, 1, 10)
    assert page is not None
    first = page.listings[0]
    assert (first.condition_raw, first.category_name) == (
        "Nuovo senza cartellino",
        "Donna Reggiseni sportivi",
    )
    assert (first.total_price, first.service_fee, first.promoted) == (
        Decimal("13.35"),
        Decimal("1.35"),
        False,
    )
    assert page.listings[1].promoted is False and page.listings[1].state_evidence is None
    assert await store.monitors.last_good_poll_items(monitor_id) == 1
    failed = await failed_poll(
        store,
        monitor_id,
        "empty feed where the last poll saw 1 listing",
        max_consecutive=5,
        kind="suspected_block",
    )
    assert failed is not None and failed.last_error_kind == "suspected_block"
    assert await store.monitors.last_good_poll_items(monitor_id) == 1
    await poll([7])
    monitor = await store.monitors.get(monitor_id, workspace_id)
    assert monitor is not None and monitor.last_error is None and monitor.last_error_kind is None


async def test_market_profiles_are_remembered_per_origin(store: Store) -> None:
    origin = f"https://www.vinted.{uuid.uuid4().hex[:6]}"
    assert await store.market.recall_profile(origin) is None
    await store.market.remember_profile(origin, "legacy")
    await store.market.remember_profile(origin, "2026-09")  # an upsert, not a conflict
    await store.market.remember_profile(origin + ".other", "legacy")
    assert await store.market.recall_profile(origin) == "2026-09"
    assert await store.market.recall_profile(origin + ".other") == "legacy"


async def test_counts_follow_absences_sources_and_the_feed(store: Store) -> None:
    monitor_id, _ = await _monitor(store)
    poll = Polls(store, monitor_id)
    rng = random.Random(11)
    known: list[int] = []
    for minute in range(15):
        fresh = list(range(minute * 100, minute * 100 + rng.randint(0, 8)))
        back = rng.sample(known, k=min(len(known), 3))
        absent = rng.sample(known, k=min(len(known), 6))
        confirmed = [
            ConfirmedState(i, rng.choice(LISTING_STATES), rng.choice(EVIDENCE_KINDS))
            for i in rng.sample(known, k=min(len(known), 2))
        ]
        await poll([*fresh, *back], confirmed, absent)
        known += fresh
        slow = {state: 0 for state in LISTING_STATES} | {"likely_sold": 0}
        async for listing in store.monitors.iter_listings(monitor_id):
            slow[listing.state] += 1
            slow["likely_sold"] += listing.state_evidence == "absence" and listing.state == "sold"
        assert await store.monitors.listing_counts(monitor_id) == slow


async def test_a_promoted_listing_missing_from_the_feed_is_not_a_drop_out(store: Store) -> None:
    monitor_id, _ = await _monitor(store)
    poll = Polls(store, monitor_id)
    await poll([ObservedListing(5, promoted=True), 6])
    for _ in range(4):
        await poll([6], absent=[5])
    assert await _listing(store, monitor_id, 5) == ("open", None, 0)
    await poll([5, 6])  # seen organically: from now on its absence counts
    for _ in range(3):
        await poll([6], absent=[5])
    assert await _listing(store, monitor_id, 5) == ("sold", "absence", 3)


async def test_unknown_drop_outs_neither_count_nor_restart_absences(store: Store) -> None:
    """Missing, but the marketplace not asked or refusing: out of the feed, nothing else."""
    monitor_id, _ = await _monitor(store)
    poll = Polls(store, monitor_id)
    await poll([1, 2, 3])
    await poll([2, 3], absent=[1])
    for _ in range(4):
        await poll([3], absent=[1], unknown=[1, 2])  # absent wins over unknown
        await poll([3], unknown=[1, 2])
    listings = {x.item_id: x async for x in store.monitors.iter_listings(monitor_id)}
    assert (listings[1].state, listings[1].state_evidence) == ("sold", "absence")
    assert listings[1].absent_polls == 3  # 1 + 2: the unknowns in between held the count
    assert (listings[2].state, listings[2].absent_polls, listings[2].in_feed) == ("open", 0, False)
    # Seen or confirmed in the same poll, a listing is not unknown.
    await poll([2, 3], unknown=[2, 3])
    assert await _listing(store, monitor_id, 2) == ("open", None, 0)
    assert [x.in_feed async for x in store.monitors.iter_listings(monitor_id)] == [
        False, True, True
    ]  # fmt: skip
    assert await _state_events(store, monitor_id) == [(1, "open", "sold", "absence")]
