"""A market that publishes some listings under draft ids (allotted days before publication),
polled poll after poll through `poll_once` with a page cap that cuts its feed: nothing still
for sale is ever recorded sold or deleted, whether item lookups answer or only absence can
tell (then a listing that left the window for `absence_polls` polls is a likely sale).
Against the real store and an in-memory marketplace, seeded."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from engine.monitors._poll import ConfirmPolicy, poll_once
from store import Store
from tests.conftest import new_monitor

from .fake_market import FakeMarket, StateLookupFailed

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
DRAFT_SHARE = 0.08  # of new listings, published under an id allotted with an earlier draft
WINDOW = 30  # organic listings the page cap lets a poll see
POLLS = 60


class DraftMarket:
    """Listings published, sold and withdrawn over steps, ids allotted in order, except that
    `DRAFT_SHARE` of the new listings take an id allotted tens of listings earlier with
    their draft (so a newest-first feed shows them among much higher ids)."""

    def __init__(self, market: FakeMarket, seed: int) -> None:
        self.market, self.rng = market, random.Random(seed)
        self.next_id, self.clock = 1000, 0.0
        self.drafts: list[int] = []  # ids allotted to drafts not yet published

    def _allot(self) -> int:
        self.next_id += self.rng.randint(1, 3)
        return self.next_id

    def publish(self) -> None:
        # Some sellers start drafts now and publish them many listings later.
        if self.rng.random() < DRAFT_SHARE * 1.2:
            self.drafts.append(self._allot())
        aged = [d for d in self.drafts if self.next_id - d > 60]
        if aged and self.rng.random() < DRAFT_SHARE:
            item_id = self.rng.choice(aged)
            self.drafts.remove(item_id)
        else:
            item_id = self._allot()
        self.clock += 1.0
        self.market.list(item_id)
        self.market.published[item_id] = self.clock

    def step(self) -> None:
        """Between two polls: a few listings published; some sold, a few withdrawn; the
        window sometimes runs back (more sold than published) and sometimes on."""
        for _ in range(self.rng.choice((0, 1, 2, 3, 4, 6))):
            self.publish()
        for item_id, state in list(self.market.states.items()):
            if state == "open":
                draw = self.rng.random()
                if draw < 0.03:
                    self.market.states[item_id] = "sold"
                elif draw < 0.04:
                    self.market.states[item_id] = "deleted"

    def id_rule_errs(self, seen: set[int]) -> bool:
        """Whether the old window by ids would have called a listing still for sale, missing
        from this answer, a drop-out (an id above the lowest id the cut feed showed)."""
        floor = min(seen)
        return any(
            state == "open" and item_id not in seen and item_id > floor
            for item_id, state in self.market.states.items()
        )


@pytest.mark.parametrize("lookups", ["answered", "absence", "mixed"])
async def test_drafts_never_make_a_listing_for_sale_sold_or_deleted(
    store: Store, lookups: str
) -> None:
    market = FakeMarket(feed_window=WINDOW)
    world = DraftMarket(market, seed=30)
    for _ in range(WINDOW * 3):
        world.publish()
    monitor = await new_monitor(store)
    policy = ConfirmPolicy(per_poll=40, absence_polls=2)
    rng = random.Random(5)
    id_rule_errs = 0
    for poll in range(POLLS):
        if poll:
            world.step()
        # Lookups: answered with the market's truth, or answered without a state (nothing
        # readable: absence is the only signal), or either at random.
        market.state_errors = {
            item_id: StateLookupFailed("invalid")
            for item_id in market.states
            if lookups == "absence" or (lookups == "mixed" and rng.random() < 0.5)
        }
        shown = [x.item_id for x in (await market.fetch_feed(monitor.url, 1)).listings]
        id_rule_errs += world.id_rule_errs(set(shown))
        await poll_once(store, market, monitor, now=NOW + timedelta(minutes=poll), policy=policy)
        wrong = [
            (x.item_id, x.state, x.state_evidence)
            async for x in store.monitors.iter_listings(monitor.id)
            if x.state in ("sold", "deleted") and market.states[x.item_id] == "open"
        ]
        assert wrong == [], f"poll {poll}: still for sale, recorded gone"
    # The run was one where ids mislead, and sales were still found.
    assert id_rule_errs >= 10
    counts = await store.monitors.listing_counts(monitor.id)
    assert counts["sold"] >= 10
    if lookups == "absence":
        assert counts["likely_sold"] == counts["sold"]
