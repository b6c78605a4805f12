"""The demo's sample month: a monitor's history recorded from a seeded simulated market, so that
a newcomer sees ranked niches, alerts and the four graphs within a minute of `make run`.

What is recorded is what a monitor of every category, polling every `POLL_HOURS` hours over
the last `DAYS` days, would have seen of the simulated market: each listing at the first poll
that shows it (listings born and sold between two polls are never seen, as in life), each
change of state at the next poll with the item page as its evidence. It is written through the
store's own `record_poll`, stamped on the market's clock (the sample ends now), and analysed by
an ordinary run of that monitor. The monitor is labelled as sample data, and `paused` from
its first poll on: it never polls, and holds no active-monitor slot of the plan.

Polls between the first and the last carry only the listings that are new or changed (a poll
of the whole catalogue every time would cost minutes of start-up for the same analysis); the
last one carries every open listing, so last sightings are current.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import cast
from urllib.parse import urlencode

from api.http.security import new_id
from api.process.demo_market import DEMO_MARKET
from engine import Engine, decide_poll
from scrapers.simulator import SimListing, World
from store import (
    ConfirmedState,
    ListingState,
    MonitorRecord,
    NewMonitor,
    ObservedListing,
    PollOutcome,
    Store,
)

log = logging.getLogger("nichescope.demo")

DAYS = 30
POLL_HOURS = 6
SAMPLE_LABEL = "Sample data · a month of the simulated marketplace"
LIVE_LABEL = "Live · the simulated marketplace"
# The live market (`demo_market.DEMO_MARKET`): its niches, hot ones and price levels (its
# niche seed), and its pace (believable sell-through), at several times its density, so that
# exact niches (category, brand, size, condition) reach the analysis' five listings in a
# month: 450 new listings a day over 60 (category, brand) pairs, a hot niche in every category
# at its own price level. Its sales fill the price book the live monitor's deals are judged
# by, so they must be the live market's prices: only its listings are drawn apart (`seed`).
# Measured: the top 25 niches span five categories and two sell 100% (tests/api/
# test_demo_market.py holds at least four and at most three; seed 11 gives six and two, seed
# 7 five and four), and the live market's first ten hours (ten minutes of `make run`) bring
# three listings under 70% of their niche's sold price, the first after five and a half
# hours, and seven price cuts, the first after an hour (before its sellers cut prices, in
# the sample too, seven such listings, the first within the hour: cut prices sell, and the
# book is lower by them). A listing cut between two polls is seen at its new price. Its ids
# lie below the live market's: its listings are not the live simulator's, whose item pages
# answer them "gone" rather than show another listing under the same id.
SAMPLE_MARKET = dataclasses.replace(
    DEMO_MARKET, seed=8, n_listings=1200, arrivals_per_day=450.0, horizon_days=DAYS + 1, n_hot=6,
    first_id=4_000_000_000,
)  # fmt: skip
_FEED_STATES = ("open",)  # what a catalogue feed shows (reserved listings leave it)


@dataclass(frozen=True, slots=True)
class Sample:
    monitor: MonitorRecord
    run_id: str
    polls: int
    listings: int


def sample_world(now: datetime) -> World:
    """The seeded market of the `DAYS` days before `now`."""
    return World(dataclasses.replace(SAMPLE_MARKET, start=now.timestamp() - DAYS * 86_400))


def _observed(world: World, item: SimListing, origin: str, at: float) -> ObservedListing:
    return ObservedListing(
        item_id=item.id,
        title=item.title,
        brand=world.brands[item.brand_id],
        size=None if item.size_id is None else world.sizes[item.size_id],
        condition=world.conditions[item.status_id],
        condition_raw=world.conditions[item.status_id],
        category_id=item.category_id,
        category_name=world.category_paths[item.category_id],
        price=item.price_at(at),
        currency=world.config.currency,
        favourites=item.favourites_at(at),
        views=item.views_at(at),
        seller_id=item.seller_id,
        url=f"{origin}/items/{item.id}",
    )


async def record_sample(
    store: Store,
    engine: Engine,
    workspace_id: str,
    origin: str,
    *,
    then: Callable[[], Awaitable[None]] | None = None,
    now: datetime | None = None,
) -> Sample:
    """Record the sample month into a new monitor of `workspace_id` and start its analysis.

    `origin` is the simulator's (the monitor's URL and its listings' links point there). The
    monitor is paused right after its first poll (later polls leave it paused), so it holds
    no active-monitor slot of the plan for longer than that poll; `then` is awaited at that
    point (the demo starts its live monitor there). Every category is followed, so that the
    ranking spans the market rather than one corner of it. Raises what the store raises; a
    failure leaves a paused, partial sample monitor behind, which the caller's log names (the
    demo goes on without it, and a restart does not resume it)."""
    now = now or datetime.now(UTC)
    world = sample_world(now)
    monitor = await _sample_monitor(store, workspace_id, origin, sorted(world.categories))
    followed = world.listings
    known: dict[int, str] = {}  # item id -> the state recorded last
    asked: dict[int, Decimal] = {}  # item id -> the price recorded last
    start = now - timedelta(days=DAYS)
    polls = int(DAYS * 24 / POLL_HOURS)
    for k in range(polls + 1):
        at = start + timedelta(hours=k * POLL_HOURS)
        t = at.timestamp()
        last = k == polls
        seen, confirmed = _observe(world, followed, (known, asked), origin, t, last=last)
        await store.monitors.record_poll(
            monitor.id,
            PollOutcome(
                poll_id=f"poll_{uuid.uuid4().hex}",
                started_at=at,
                finished_at=at + timedelta(seconds=20),
                pages=max(1, len(seen) // 96),
                seen=tuple(seen),
                confirmed=tuple(confirmed),
                next_poll_at=at + timedelta(hours=POLL_HOURS),
                observed_at=at,
                clock="market",
            ),
            decide=decide_poll,
        )
        if k == 0:
            await store.monitors.set_status(monitor.id, "paused")
            if then is not None:
                await then()
    run = await engine.runs.start(
        run_id=new_id("run"),
        workspace_id=workspace_id,
        label=None,  # named after the monitor: its label says it is sample data
        source="monitor",
        url=None,
        monitor_id=monitor.id,
        max_items=len(known),
    )
    return Sample(monitor=monitor, run_id=run.id, polls=polls + 1, listings=len(known))


def _observe(
    world: World,
    followed: list[SimListing],
    recorded: tuple[dict[int, str], dict[int, Decimal]],
    origin: str,
    t: float,
    *,
    last: bool,
) -> tuple[list[ObservedListing], list[ConfirmedState]]:
    """What a poll at `t` sees in the feed and confirms on item pages; `recorded` (item id ->
    the state recorded last, item id -> the price recorded last) is brought up to date. A
    listing whose seller cut its price is seen again at its new price."""
    known, asked = recorded
    seen: list[ObservedListing] = []
    confirmed: list[ConfirmedState] = []
    for item in followed:
        if item.born > t:
            break  # listings are in birth order
        before = known.get(item.id)
        if before in ("sold", "deleted"):
            continue  # for good
        state = item.state_at(t)
        if before is None:
            if state in _FEED_STATES:
                seen.append(_observed(world, item, origin, t))
                known[item.id], asked[item.id] = "open", item.price_at(t)
            continue
        cut = item.price_at(t) != asked[item.id]
        if state in _FEED_STATES and (last or cut or before != "open"):
            seen.append(_observed(world, item, origin, t))
            asked[item.id] = item.price_at(t)
        elif state != before and state is not None and state != "open":
            # The simulator's states are the store's: reserved, sold, deleted.
            confirmed.append(ConfirmedState(item.id, cast(ListingState, state), "item_page"))
        known[item.id] = state or before
    return seen, confirmed


async def _sample_monitor(
    store: Store, workspace_id: str, origin: str, categories: Iterable[int]
) -> MonitorRecord:
    query = urlencode([("catalog[]", c) for c in categories] + [("order", "newest_first")])
    return await store.monitors.create(
        NewMonitor(
            monitor_id=new_id("mon"),
            workspace_id=workspace_id,
            url=f"{origin}/catalog?{query}",
            label=SAMPLE_LABEL,
            interval_seconds=POLL_HOURS * 3600,
            page_cap=20,
        )
    )
