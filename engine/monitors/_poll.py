"""One poll of one monitor: read the feed, confirm drop-outs, write it all at once."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import trio

from store import ConfirmedState, MonitorRecord, PollOutcome, PollRecord, Store

from ._market import Marketplace

# Drop-outs are confirmed a few at a time: politeness is the client's job, but there is no
# point queueing hundreds of detail requests at once behind its limits.
CONFIRM_CONCURRENCY = 4


async def confirm_states(
    market: Marketplace, url: str, item_ids: set[int]
) -> tuple[ConfirmedState, ...]:
    """Ask the marketplace for the state of each listing that left the feed.

    A listing whose confirmation fails is left out (it stays as it was and is asked about
    again next poll): only confirmed changes count. Cancellation propagates.
    """
    confirmed: list[ConfirmedState] = []
    limiter = trio.CapacityLimiter(CONFIRM_CONCURRENCY)

    async def confirm(item_id: int) -> None:
        async with limiter:
            try:
                state = await market.fetch_state(url, item_id)
            except Exception:
                return
            confirmed.append(ConfirmedState(item_id=item_id, state=state))

    async with trio.open_nursery() as nursery:
        for item_id in sorted(item_ids):
            nursery.start_soon(confirm, item_id)
    return tuple(sorted(confirmed, key=lambda c: c.item_id))


async def poll_once(
    store: Store,
    market: Marketplace,
    monitor: MonitorRecord,
    *,
    now: datetime,
    lease_token: int | None = None,
) -> PollRecord:
    """Poll `monitor` once and record the outcome in one transaction.

    Raises whatever the marketplace raises when the feed cannot be read (nothing is written
    then); the caller records the error and backs off. With a `lease_token` (cluster mode),
    `LeaseLost` when another node has claimed the monitor meanwhile (nothing written).
    """
    started = trio.current_time()
    feed = await market.fetch_feed(monitor.url, monitor.page_cap)
    live = await store.monitors.known_live_listings(monitor.id)
    dropped = live - {listing.item_id for listing in feed.listings}
    confirmed = await confirm_states(market, monitor.url, dropped)
    elapsed = timedelta(seconds=trio.current_time() - started)
    outcome = PollOutcome(
        poll_id=f"poll_{uuid.uuid4().hex}",
        started_at=now,
        finished_at=now + elapsed,
        pages=feed.pages,
        seen=feed.listings,
        confirmed=confirmed,
        next_poll_at=now + elapsed + timedelta(seconds=monitor.interval_seconds),
    )
    return await store.monitors.record_poll(monitor.id, outcome, lease_token=lease_token)
