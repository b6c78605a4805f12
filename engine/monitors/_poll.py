"""One poll of one monitor: read the feed, confirm drop-outs, write it all at once."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import trio

from store import ConfirmedState, FeedOrder, MonitorRecord, PollOutcome, PollRecord, Store

from ..market import Feed, Marketplace, SuspectedBlock
from ._clock import stamp_poll
from ._feed_window import has_left, place, window_ends, windows_of
from ._listing_states import Lookup, decide_poll, drop_out_verdicts, failed_lookup
from ._schedule import next_tick

# Drop-outs are confirmed a few at a time: politeness is the client's job, but there is no
# point queueing hundreds of state requests at once behind its limits.
CONFIRM_CONCURRENCY = 4
# A poll takes a feed or a lookup another monitor of the node fetched up to this share of its
# own interval ago (the actor adds how late a poll on its search's grid runs): the monitors of
# one search poll at one tick (`_schedule`) and read the one fetch made at it, and none takes
# the tick before's, made a whole interval earlier.
SHARE_OF_INTERVAL = 0.5
# A feed shrinking by more than this share at once, against the last good poll, is a block.
SHRINK_LIMIT = 0.8
# ...judged only when the last good poll saw at least this many: a niche of three listings
# that all sell between two polls is the market, and refusing it would stop the monitor.
MIN_JUDGED_FEED = 5


@dataclass(frozen=True, slots=True)
class ConfirmPolicy:
    """How much a poll may spend on confirming states, and when absence means a likely sale."""

    per_poll: int = 40  # state requests per poll; the rest wait for the next poll
    absence_polls: int = 3  # polls absent (answered without a state) -> a likely sale


@dataclass(frozen=True, slots=True)
class Lookups:
    """What asking the marketplace about drop-outs came to: the answers, and how each
    asked listing fared (`_listing_states.Lookup`; a listing not asked is not there)."""

    confirmed: tuple[ConfirmedState, ...]
    fared: dict[int, Lookup]


async def confirm_states(
    market: Marketplace, url: str, item_ids: Sequence[int], fresh_within: float = 0.0
) -> Lookups:
    """Ask the marketplace for the state of each listing in `item_ids`.

    A listing whose confirmation fails is left out of the answers (it stays as it was and is
    asked about again next poll); how it failed, by the marketplace's `failure_kind`, says
    whether it was answered without a state or refused. Cancellation propagates.
    """
    confirmed: list[ConfirmedState] = []
    fared: dict[int, Lookup] = {}
    limiter = trio.CapacityLimiter(CONFIRM_CONCURRENCY)

    async def confirm(item_id: int) -> None:
        async with limiter:
            try:
                answer = await market.fetch_state(url, item_id, fresh_within=fresh_within)
            except Exception as err:
                fared[item_id] = failed_lookup(market.failure_kind(err))
                return
            confirmed.append(answer)
            fared[item_id] = "answered"

    async with trio.open_nursery() as nursery:
        for item_id in item_ids:
            nursery.start_soon(confirm, item_id)
    return Lookups(tuple(sorted(confirmed, key=lambda c: c.item_id)), fared)


def check_believable(feed: Feed, last_items: int | None) -> None:
    """`SuspectedBlock` when the feed is empty or shrank by more than `SHRINK_LIMIT` where the
    last good poll of the same query saw listings (MARKETPLACE.md: a block can look like
    success). Nothing of such a poll is applied: no drop-outs, no absences."""
    if last_items is None or last_items < MIN_JUDGED_FEED:
        return
    seen = len(feed.listings)
    if seen == 0 or seen < last_items * (1 - SHRINK_LIMIT):
        raise SuspectedBlock(seen, last_items)


@dataclass(frozen=True, slots=True)
class DropOuts:
    """Live listings missing from a poll's feed, each oldest sighting first: those that left
    the feed's window, and those that may only be out of sight beyond its page cap; and the
    places in publication order the feed gave (`PollOutcome.ranks`)."""

    left: list[int]
    out_of_sight: list[int]
    ranks: dict[int, int]


def drop_outs(order: FeedOrder, feed: Feed) -> DropOuts:
    """Which live listings missing from `feed` left its window, by the feed's own order:
    those published after the last organic listing the feed showed (`_feed_window`: ids
    are allotted with drafts, so they say nothing about it)."""
    windows = windows_of(feed)
    placed = place(windows, order)
    ends = window_ends(windows, order.ranks | placed)
    seen = {listing.item_id for listing in feed.listings}
    missing = sorted(
        (x for x in order.live.values() if x.item_id not in seen),
        key=lambda x: (x.last_seen_at, x.item_id),
    )
    left = [x.item_id for x in missing if has_left(x.feed_rank, x.category_id, ends)]
    taken = set(left)
    out_of_sight = [x.item_id for x in missing if x.item_id not in taken]
    return DropOuts(left, out_of_sight, placed)


async def poll_once(
    store: Store,
    market: Marketplace,
    monitor: MonitorRecord,
    *,
    now: datetime,
    lease_token: int | None = None,
    policy: ConfirmPolicy | None = None,
    fresh_within: float | None = None,
) -> PollRecord:
    """Poll `monitor` once and record the outcome in one transaction.

    Listings and their events are stamped on the market's clock when it is believable
    (`_clock`). Listings that left the feed's window (`drop_outs`, by the feed's order) are
    confirmed first (oldest sighting first), then, with what is left of the budget, those
    only out of sight. Of those that
    left it, the ones whose lookup was answered without a state count as absent (repeated
    absence makes a likely sale); those not asked or refused an answer are unknown, which
    proves nothing (`_listing_states.drop_out_verdicts`). The store writes what the listing
    state machine (`_listing_states.decide_poll`) decides.
    Raises whatever the marketplace raises when the feed cannot be read, and `SuspectedBlock`
    when it cannot be believed (nothing is written then); the caller records the error and
    backs off. `LeaseLost` when the monitor is gone or, with a `lease_token` (cluster
    mode), claimed by another node (nothing written). `fresh_within`: `SHARE_OF_INTERVAL`.
    """
    policy = policy or ConfirmPolicy()
    started = trio.current_time()
    fresh = SHARE_OF_INTERVAL * monitor.interval_seconds if fresh_within is None else fresh_within
    feed = await market.fetch_feed(monitor.url, monitor.page_cap, fresh_within=fresh, subscriber=monitor.id)  # noqa: E501  # fmt: skip
    last = await store.monitors.last_good_poll(monitor.id)
    try:
        check_believable(feed, None if last is None else last.items)
    except SuspectedBlock:
        market.note_suspicious(monitor.url, SuspectedBlock.kind)
        raise
    order = await store.monitors.feed_order(monitor.id, (x.item_id for x in feed.listings))
    missing = drop_outs(order, feed)
    ask = (missing.left + missing.out_of_sight)[: max(0, policy.per_poll)]
    lookups = await confirm_states(market, monitor.url, ask, fresh)
    absent, unknown = drop_out_verdicts(missing.left, lookups.fared)
    elapsed = timedelta(seconds=trio.current_time() - started)
    stamp = stamp_poll(feed.market_time, now + elapsed, last)
    outcome = PollOutcome(
        poll_id=f"poll_{uuid.uuid4().hex}",
        started_at=now,
        finished_at=now + elapsed,
        pages=feed.pages,
        seen=feed.listings,
        confirmed=lookups.confirmed,
        next_poll_at=next_tick(now + elapsed, monitor.interval_seconds, monitor.url, monitor.id),
        absent=absent,
        likely_after=policy.absence_polls,
        observed_at=stamp.at,
        clock=stamp.clock,
        unknown=unknown,
        ranks=missing.ranks,
    )
    return await store.monitors.record_poll(
        monitor.id, outcome, lease_token=lease_token, decide=decide_poll
    )
