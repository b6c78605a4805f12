"""`SharedMarketplace` alone, on trio's clock, over the in-memory marketplace: single flight,
reuse within `fresh_within`, failures reach every waiter and are never kept, a cancelled
waiter leaves the request to the others, and the entries stay bounded."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from engine.monitors._shared_feeds import SharedMarketplace, SharingSettings
from store import ConfirmedState
from tests.engine.fake_market import FakeMarket, StateLookupFailed

URL = "https://www.vinted.fr/catalog?brand_ids[]=53"


@pytest.fixture
async def market() -> FakeMarket:
    fake = FakeMarket()
    for item in range(1, 4):
        fake.list(item)
    return fake


@pytest.fixture
async def shared(market: FakeMarket, nursery: trio.Nursery) -> AsyncIterator[SharedMarketplace]:
    sharing = SharedMarketplace(market, SharingSettings(max_feeds=3, max_states=3))
    await nursery.start(sharing.run)
    yield sharing


async def test_concurrent_callers_of_one_search_wait_for_one_request(
    market: FakeMarket, shared: SharedMarketplace
) -> None:
    market.gate = trio.Event()
    answers = []

    async def poll(monitor: str) -> None:
        answers.append(await shared.fetch_feed(URL, 1, subscriber=monitor))

    async with trio.open_nursery() as nursery:
        for i in range(5):
            nursery.start_soon(poll, f"mon_{i}")
        await trio.testing.wait_all_tasks_blocked()
        market.gate.set()
    assert market.feed_calls == 1 and len(answers) == 5 and len({id(a) for a in answers}) == 1
    [feed] = shared.report().feeds
    assert (feed.fetches, feed.reuses, feed.subscribers) == (1, 4, 5)


async def test_an_answer_is_reused_within_fresh_within_only(
    market: FakeMarket, shared: SharedMarketplace, autojump_clock: trio.testing.MockClock
) -> None:
    await shared.fetch_feed(URL, 1, fresh_within=54)
    await trio.sleep(50)
    await shared.fetch_feed(URL, 1, fresh_within=54)
    assert market.feed_calls == 1
    await shared.fetch_feed(URL, 1, fresh_within=10)  # a shorter interval's monitor: too old
    assert market.feed_calls == 2
    await shared.fetch_feed(URL, 2, fresh_within=54)  # another page cap is another feed
    assert market.feed_calls == 3
    await shared.fetch_feed(URL, 1)  # fresh_within 0: nothing kept will do
    assert market.feed_calls == 4


async def test_a_failure_reaches_every_waiter_and_is_not_kept(
    market: FakeMarket, shared: SharedMarketplace
) -> None:
    market.gate = trio.Event()
    market.feed_error = RuntimeError("blocked")
    failures: list[Exception] = []

    async def poll() -> None:
        try:
            await shared.fetch_feed(URL, 1, fresh_within=60)
        except RuntimeError as err:
            failures.append(err)

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(poll)
        await trio.testing.wait_all_tasks_blocked()
        market.gate.set()
    assert len(failures) == 3 and market.feed_calls == 1
    market.feed_error = None
    await shared.fetch_feed(URL, 1, fresh_within=60)  # asked again, not the failure again
    assert market.feed_calls == 2


async def test_a_cancelled_waiter_does_not_break_the_request_for_others(
    market: FakeMarket, shared: SharedMarketplace
) -> None:
    market.gate = trio.Event()
    got = []

    async def patient() -> None:
        got.append(await shared.fetch_feed(URL, 1))

    async with trio.open_nursery() as nursery:
        with trio.CancelScope() as first:
            nursery.start_soon(patient)  # joins the flight the cancelled caller started
            await trio.testing.wait_all_tasks_blocked()
            first.cancel()
            await shared.fetch_feed(URL, 1)
        assert first.cancelled_caught  # cancellation reached its caller, not swallowed
        await trio.testing.wait_all_tasks_blocked()
        market.gate.set()
    assert len(got) == 1 and market.feed_calls == 1


async def test_final_states_serve_everyone_other_answers_only_within_fresh_within(
    market: FakeMarket, shared: SharedMarketplace, autojump_clock: trio.testing.MockClock
) -> None:
    market.states[2] = "sold"
    assert (await shared.fetch_state(URL, 2)).state == "sold"
    await trio.sleep(3600)
    assert await shared.fetch_state(URL, 2) == ConfirmedState(2, "sold", "item_page")
    assert market.detail_calls == 1  # a sale is final: one lookup serves every monitor
    await shared.fetch_state(URL, 1, fresh_within=30)
    await trio.sleep(20)
    await shared.fetch_state(URL, 1, fresh_within=30)
    assert market.detail_calls == 2
    await trio.sleep(20)
    await shared.fetch_state(URL, 1, fresh_within=30)  # open may have changed: asked again
    assert market.detail_calls == 3
    assert (shared.report().state_hits, shared.report().state_misses) == (2, 3)


async def test_refused_lookups_are_never_kept_stateless_answers_are(
    market: FakeMarket, shared: SharedMarketplace
) -> None:
    market.state_errors[1] = StateLookupFailed("rate_limited")
    market.state_errors[3] = StateLookupFailed("invalid")  # answered, nothing readable
    for _ in range(2):
        for item in (1, 3):
            with pytest.raises(StateLookupFailed) as raised:
                await shared.fetch_state(URL, item, fresh_within=60)
            assert shared.failure_kind(raised.value) == raised.value.kind
    assert market.detail_calls == 3  # item 1 twice, item 3 once


async def test_entries_are_bounded(market: FakeMarket, shared: SharedMarketplace) -> None:
    for brand in range(10):
        await shared.fetch_feed(
            f"https://www.vinted.fr/catalog?brand_ids[]={brand}", 1, fresh_within=60
        )
        await shared.fetch_state(URL, 100 + brand, fresh_within=60)
    report = shared.report()
    assert len(report.feeds) == 3 and report.states_kept == 3
    await shared.fetch_feed("https://www.vinted.fr/catalog?brand_ids[]=9", 1, fresh_within=60)
    assert market.feed_calls == 10  # the most recent is kept


async def test_entries_older_than_any_reuse_asked_are_dropped(
    market: FakeMarket, shared: SharedMarketplace, autojump_clock: trio.testing.MockClock
) -> None:
    await shared.fetch_feed(URL, 1, fresh_within=5)
    await trio.sleep(10)
    await shared.fetch_feed(f"{URL}&x=1", 1, fresh_within=5)
    assert [f.url for f in shared.report().feeds] == [f"{URL}&x=1"]
