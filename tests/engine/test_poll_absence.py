"""Absence from the feed makes a likely sale only when the marketplace was asked about the
listing and answered: a refused lookup (429, block page, outage) or one never asked (over the
poll's budget) is unknown, and neither advances nor resets the count. One poll at a time,
straight through `poll_once`, against the real store and an in-memory marketplace."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine.monitors._poll import ConfirmPolicy, poll_once
from store import MonitorRecord, Store
from tests.conftest import new_monitor

from .fake_market import FakeMarket, StateLookupFailed

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


class Polls:
    """Successive polls of one monitor, a minute apart on the service's clock."""

    def __init__(self, store: Store, market: FakeMarket, monitor: MonitorRecord) -> None:
        self.store, self.market, self.monitor, self.minute = store, market, monitor, 0

    async def __call__(self, policy: ConfirmPolicy | None = None) -> None:
        now = NOW + timedelta(minutes=self.minute)
        self.minute += 1
        await poll_once(self.store, self.market, self.monitor, now=now, policy=policy)

    async def listing(self, item_id: int) -> tuple[str, str | None, int]:
        found = [
            x async for x in self.store.monitors.iter_listings(self.monitor.id)
            if x.item_id == item_id
        ]  # fmt: skip
        return found[0].state, found[0].state_evidence, found[0].absent_polls

    async def stories(self) -> dict[int, list[tuple[str | None, str | None]]]:
        told: dict[int, list[tuple[str | None, str | None]]] = {}
        async for event in self.store.monitors.iter_events(self.monitor.id):
            if event.kind == "state":
                told.setdefault(event.item_id, []).append((event.to_state, event.evidence))
        return told


async def _watched(store: Store, items: range) -> tuple[FakeMarket, Polls]:
    monitor = await new_monitor(store)
    market = FakeMarket()
    for item_id in items:
        market.list(item_id)
    polls = Polls(store, market, monitor)
    await polls()  # the bootstrap: every listing open
    return market, polls


async def test_refused_lookups_never_make_a_likely_sale(store: Store) -> None:
    """The flaky hardening run, made deterministic: a listing reserved on the market (so out
    of the feed) whose lookups were all refused must not be recorded sold by absence."""
    market, poll = await _watched(store, range(1, 11))
    market.states[3] = market.states[4] = market.states[5] = "reserved"
    market.state_errors[3] = StateLookupFailed("rate_limited")  # 429 past the retries
    market.state_errors[4] = StateLookupFailed("blocked")  # a 403 block page
    market.state_errors[5] = RuntimeError("boom")  # a failure nobody classified
    for _ in range(5):
        await poll()
    for item_id in (3, 4, 5):
        assert await poll.listing(item_id) == ("open", None, 0)
    assert await poll.stories() == {}
    # The weather clears: the market's own answer is recorded, and nothing else.
    market.state_errors.clear()
    await poll()
    for item_id in (3, 4, 5):
        assert await poll.listing(item_id) == ("reserved", "item_page", 0)
    assert await poll.stories() == {i: [("reserved", "item_page")] for i in (3, 4, 5)}
    counts = await store.monitors.listing_counts(poll.monitor.id)
    assert (counts["sold"], counts["likely_sold"], counts["reserved"]) == (0, 0, 3)


async def test_listings_over_the_confirmation_budget_are_not_absent(store: Store) -> None:
    market, poll = await _watched(store, range(1, 6))
    for item_id in (1, 2, 3):
        market.states[item_id] = "reserved"
    # One lookup per poll: the oldest drop-out, 1, takes it every time (reserved, it stays
    # live); 2 and 3 are never asked about.
    for _ in range(4):
        await poll(ConfirmPolicy(per_poll=1, absence_polls=3))
    assert await poll.listing(1) == ("reserved", "item_page", 0)
    assert await poll.listing(2) == ("open", None, 0)
    assert await poll.listing(3) == ("open", None, 0)
    assert await poll.stories() == {1: [("reserved", "item_page")]}


async def test_an_answer_without_a_state_still_counts_and_unknowns_wait(store: Store) -> None:
    """Likely sales stay: a listing gone from the fully read feed whose pages answer but say
    nothing readable is absent. A refused lookup in between neither counts nor restarts."""
    market, poll = await _watched(store, range(1, 6))
    market.states[2] = "sold"
    unreadable, refused = StateLookupFailed("invalid"), StateLookupFailed("rate_limited")
    for error, expected in (
        (unreadable, ("open", None, 1)),
        (refused, ("open", None, 1)),  # unknown: the count holds
        (unreadable, ("open", None, 2)),
        (refused, ("open", None, 2)),
        (unreadable, ("sold", "absence", 3)),
    ):
        market.state_errors[2] = error
        await poll()
        assert await poll.listing(2) == expected
    assert await poll.stories() == {2: [("sold", "absence")]}
    assert (await store.monitors.listing_counts(poll.monitor.id))["likely_sold"] == 1
