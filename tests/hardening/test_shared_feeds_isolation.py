"""What one monitor's use of the node's shared marketplace requests (`SharedMarketplace`)
may leave for another's, across workspaces: the request of a shared feed is the search its
key names whoever spelt it, and an error handed to many callers carries none of their frames."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType

import trio
import trio.testing

from engine.market import Feed
from engine.monitors._shared_feeds import SharedMarketplace
from tests.engine.fake_market import FakeMarket, StateLookupFailed

CANONICAL = "https://www.vinted.fr/catalog?brand_ids[]=53"
# Another spelling of the same search to `check_url` (the real client's canonical URL drops
# unknown `*_ids` filters) whose own request would ask the marketplace for another feed.
SPELLING = CANONICAL + "&video_game_platform_ids=5"


@dataclass
class SpellingMarket(FakeMarket):
    asked: list[str] = field(default_factory=list)

    async def check_url(self, url: str) -> str:
        return (await super().check_url(url)).replace("&video_game_platform_ids=5", "")

    async def fetch_feed(
        self, url: str, page_cap: int, *, fresh_within: float = 0.0, subscriber: str | None = None
    ) -> Feed:
        self.asked.append(url)
        return await super().fetch_feed(url, page_cap)


async def test_a_shared_feed_is_fetched_for_its_key_not_for_the_first_callers_spelling(
    nursery: trio.Nursery,
) -> None:
    market = SpellingMarket()
    market.list(1)
    shared = SharedMarketplace(market)
    await nursery.start(shared.run)
    # One workspace's monitor asks first, with its spelling; another's, of the canonical URL,
    # is served the same answer: it must be the canonical search's feed.
    await shared.fetch_feed(SPELLING, 1, fresh_within=60, subscriber="mon_attacker")
    await shared.fetch_feed(CANONICAL, 1, fresh_within=60, subscriber="mon_victim")
    assert market.feed_calls == 1
    assert market.asked == [CANONICAL]


def _depth(trace: TracebackType | None) -> int:
    depth = 0
    while trace is not None:
        depth, trace = depth + 1, trace.tb_next
    return depth


async def test_a_kept_error_does_not_gather_the_frames_of_every_caller_it_reached(
    nursery: trio.Nursery,
) -> None:
    market = FakeMarket()
    market.list(1)
    market.state_errors[1] = StateLookupFailed("invalid")  # an answer without a state: kept
    shared = SharedMarketplace(market)
    await nursery.start(shared.run)
    depths = []
    for _ in range(200):  # polls of many monitors, of any workspace, holding the listing
        try:
            await shared.fetch_state(CANONICAL, 1, fresh_within=60)
        except StateLookupFailed as err:
            depths.append(_depth(err.__traceback__))
    assert market.detail_calls == 1 and len(depths) == 200
    assert max(depths) == depths[0] <= 10, depths[-1]


async def test_a_failure_reaches_each_waiter_with_the_requests_traceback_only(
    nursery: trio.Nursery,
) -> None:
    market = FakeMarket()
    market.gate = trio.Event()
    market.feed_error = RuntimeError("blocked")
    shared = SharedMarketplace(market)
    await nursery.start(shared.run)
    depths: list[int] = []

    async def poll() -> None:
        try:
            await shared.fetch_feed(CANONICAL, 1, fresh_within=60)
        except RuntimeError as err:
            depths.append(_depth(err.__traceback__))

    async with trio.open_nursery() as waiters:
        for _ in range(50):
            waiters.start_soon(poll)
        await trio.testing.wait_all_tasks_blocked()
        market.gate.set()
    assert market.feed_calls == 1 and len(depths) == 50 and max(depths) == min(depths)
