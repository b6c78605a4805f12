"""One analysis run, start to finish: gather evidence, analyse off the Trio thread, store.

States: `queued` -> `running` -> `succeeded` | `failed` | `cancelled`. The final state is
written exactly once (the first writer wins), also when the run is cancelled mid-way.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from store import (
    LeaseLost,
    ListingEventRecord,
    ListingRecord,
    PollRecord,
    RunRecord,
    RunState,
    Store,
    to_record,
)

from ..analysis import evidence_depth
from ..market import Marketplace

log = logging.getLogger(__name__)

FEED_PAGE_SIZE = 96


class RunFailed(Exception):
    """A run cannot go on; the message is shown to the user."""


@dataclass(frozen=True)
class Evidence:
    listings: list[ListingRecord]
    events: list[ListingEventRecord]
    source: str  # "scrape" or "monitor"
    include_likely_sales: bool | None = None  # rank on likely sales too; None: evidence decides
    polls: list[PollRecord] = field(default_factory=list)  # a monitor's, oldest first


Analyser = Callable[[Evidence], dict[str, Any]]


async def monitor_evidence(
    store: Store, monitor_id: str, *, include_likely_sales: bool | None = None
) -> Evidence:
    """A monitor's whole history (listings, events, polls) as evidence for the analysis."""
    listings = [listing async for listing in store.monitors.iter_listings(monitor_id)]
    events = [event async for event in store.monitors.iter_events(monitor_id)]
    polls = [poll async for poll in store.monitors.iter_polls(monitor_id)]
    return Evidence(
        listings=listings,
        events=events,
        source="monitor",
        include_likely_sales=include_likely_sales,
        polls=polls,
    )


async def gather_monitor_history(store: Store, run: RunRecord) -> Evidence:
    assert run.monitor_id is not None
    monitor = await store.monitors.get(run.monitor_id, run.workspace_id)
    if monitor is None:
        raise RunFailed("the monitor of this run no longer exists")
    return await monitor_evidence(store, monitor.id, include_likely_sales=run.include_likely_sales)


async def gather_scrape(store: Store, market: Marketplace, run: RunRecord) -> Evidence:
    assert run.url is not None
    pages = max(1, math.ceil(run.max_items / FEED_PAGE_SIZE))
    feed = await market.fetch_feed(run.url, pages)
    now = store.clock()
    # First seen now, open and in the feed: the rest is what the feed showed of it.
    listings = [
        to_record(
            ListingRecord,
            seen,
            first_seen_at=now,
            last_seen_at=now,
            state="open",
            state_changed_at=now,
            in_feed=True,
            state_evidence=None,
            absent_polls=0,
        )
        for seen in feed.listings[: run.max_items]
    ]
    for problem in feed.problems[:20]:
        await store.runs.log(run.id, f"skipped a broken listing: {problem}")
    return Evidence(listings=listings, events=[], source="scrape")


async def execute_run(
    store: Store,
    market: Marketplace,
    run: RunRecord,
    analyser: Analyser,
    *,
    new_analysis_id: Callable[[], str],
    cancelled_by_user: Callable[[], bool],
    lease_token: int | None = None,
) -> None:
    """Run `run` to a final state.

    A user's cancel marks it `cancelled` (shielded) and re-raises; a shutdown leaves it
    `running` so that the next start of the service (or another node) runs it again. With a
    `lease_token` (cluster mode) its results are written only while this node holds the run's
    lease; once another node has taken it over, it ends here without writing anything more.
    """
    try:
        await _execute(store, market, run, analyser, new_analysis_id, lease_token)
    except LeaseLost:
        log.info("run %s was taken over by another node; stopping here", run.id)
    except trio.Cancelled:
        with trio.CancelScope(shield=True):
            if cancelled_by_user():
                await store.runs.log(run.id, "cancelled")
                await _finish_unless_taken(store, run.id, "cancelled", lease_token)
            else:
                await store.runs.log(run.id, "interrupted (shutdown or taken over); runs again")
        raise
    except Exception as err:
        reason = str(err) if isinstance(err, RunFailed) else f"{type(err).__name__}: {err}"
        log.info("run %s failed: %s", run.id, reason)
        with trio.CancelScope(shield=True):
            await store.runs.log(run.id, f"failed: {reason}")
            await _finish_unless_taken(store, run.id, "failed", lease_token, error=reason[:1000])


async def _finish_unless_taken(
    store: Store, run_id: str, state: RunState, lease_token: int | None, **values: Any
) -> None:
    try:
        await store.runs.finish(run_id, state, lease_token=lease_token, **values)
    except LeaseLost:
        log.info("run %s was taken over by another node; its state is theirs", run_id)


async def _execute(
    store: Store,
    market: Marketplace,
    run: RunRecord,
    analyser: Analyser,
    new_analysis_id: Callable[[], str],
    lease_token: int | None,
) -> None:
    await store.runs.mark_running(run.id)
    if run.source == "monitor":
        await store.runs.log(run.id, f"reading the history of monitor {run.monitor_id}")
        evidence = await gather_monitor_history(store, run)
    else:
        await store.runs.log(run.id, f"scraping up to {run.max_items} listings of {run.url}")
        evidence = await gather_scrape(store, market, run)
    await store.runs.log(
        run.id, f"{len(evidence.listings)} listings, {len(evidence.events)} events: analysing"
    )
    await store.runs.progress(run.id, 0.5, len(evidence.listings))
    # CPU-bound: off the Trio thread so the API stays responsive. Cancelling abandons the
    # thread's result (the thread finishes in the background) and the run ends cancelled.
    result = await trio.to_thread.run_sync(analyser, evidence, abandon_on_cancel=True)
    depth = evidence_depth(result)  # kept beside it: the dashboard picks on it
    analysis = await store.runs.succeed_with_analysis(
        run,
        analysis_id=new_analysis_id(),
        source="monitor" if evidence.source == "monitor" else "scrape",
        result_json=json.dumps(result),
        items=len(evidence.listings),
        lease_token=lease_token,
        window_days=depth.days,
        sales=depth.sales,
    )
    if analysis is None:
        log.info("run %s ended while it was being analysed: its analysis was not kept", run.id)
