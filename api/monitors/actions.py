"""Monitor use cases shared by the REST handlers (`rest.py`), the web pages and the MCP tools.

Validation beyond the request schema (the catalogue URL's site, an analysis to start from),
plan quotas, and the calls into the engine. Each function takes what it acts on (the
`Store`, or a `Backend` when it asks the engine or reads the settings) and the caller's
workspace: the handlers pass them in, and nothing here needs a request. Another workspace's
monitor is a 404, indistinguishable from one that does not exist.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from api.analyses.actions import analysis_in_workspace
from api.backend import Backend
from api.billing.quotas import plan_limits, refused, require_poll_interval, require_quota
from api.catalogue_urls import catalogue_url_refused, refuse_unaccepted_site
from api.http.errors import ApiError, BadRequest, Conflict, deleted, found
from api.http.security import new_id
from api.monitors.schemas import (
    MonitorOut,
    StartMonitorRequest,
)
from engine import CatalogueUrlRefused, EngineBusy
from scrapers import InvalidCatalogueUrl, newest_first
from store import (
    FAILURE_EXPLAINED,
    ListingRecord,
    MonitorRecord,
    NewMonitor,
    PollRecord,
    QuotaFull,
    Store,
    record_fields,
)


class Busy(ApiError):
    status, code = 429, "busy"


def monitor_out(
    monitor: MonitorRecord,
    counts: dict[str, int] | None = None,
    market_profile: str | None = None,
    last_check: PollRecord | None = None,
) -> MonitorOut:
    fields = {k: v for k, v in record_fields(monitor).items() if k != "workspace_id"}
    kind = monitor.last_error_kind
    return MonitorOut.model_validate(
        {
            **fields,
            "last_error_kind": kind if kind in FAILURE_EXPLAINED else None,
            "last_error_explanation": FAILURE_EXPLAINED.get(kind or ""),
            "bootstrapping": monitor.bootstrapped_at is None and monitor.status != "error",
            "counts": counts,
            "market_profile": market_profile,
            **clock_fields(last_check),
        }
    )


def clock_fields(last_check: PollRecord | None) -> dict[str, object]:
    """Whose clock the listings' times are on, and the market's at the last good check."""
    if last_check is None:
        return {}
    market = last_check.clock == "market" and last_check.market_at is not None
    return {
        "clock": "market" if market else "service",
        "last_check_market_at": last_check.market_at if market else None,
    }


async def one_monitor_out(backend: Backend, monitor: MonitorRecord) -> MonitorOut:
    """A single monitor as shown alone (the REST read and its web page): with its listing
    counts and the market profile its site speaks, which lists leave out."""
    monitors = backend.store.monitors
    counts = await monitors.listing_counts(monitor.id)
    last_check = await monitors.last_good_poll(monitor.id)  # whose clock, and the market's
    return monitor_out(monitor, counts, await market_profile_of(backend, monitor), last_check)


async def market_profile_of(backend: Backend, monitor: MonitorRecord) -> str | None:
    """The wire profile the monitor's site speaks: the configured one, or what `auto` found
    and remembered for every node (None until a check has read the site)."""
    if backend.settings.market_profile != "auto":
        return backend.settings.market_profile
    parts = urlsplit(monitor.url)
    return await backend.store.market.recall_profile(f"{parts.scheme}://{parts.netloc}")


def listing_out(listing: ListingRecord) -> dict[str, object]:
    """A listing's fields for `ListingOut`, with `likely` (sold by absence) derived."""
    fields = record_fields(listing)
    fields["likely"] = listing.state == "sold" and listing.state_evidence == "absence"
    return fields


async def owned_monitor(store: Store, monitor_id: str, workspace_id: str) -> MonitorRecord:
    """The monitor `monitor_id` of `workspace_id` (the API caller's, or a page's signed-in
    person's); `NotFound` for another workspace's monitor or none."""
    return found(await store.monitors.get(monitor_id, workspace_id), "monitor")


async def start_monitor_in(
    backend: Backend, workspace_id: str, data: StartMonitorRequest
) -> MonitorRecord:
    """Start a monitor in `workspace_id` (the REST view and the MCP `create_monitor` tool).

    Raises `ApiError`s: `NotFound` (analysis), `BadRequest` `url_refused` or
    `interval_too_short`; the monitor is `paused` until its background bootstrap ends.
    """
    store, settings = backend.store, backend.settings
    requested_url = data.url
    if data.analysis_id is not None:
        requested_url = await catalogue_url_of_analysis(store, workspace_id, data.analysis_id)
    assert requested_url is not None
    refuse_unaccepted_site(requested_url, settings, doing="monitored")
    try:
        # A monitor reads the feed newest first whatever the URL says: where its window of
        # pages ends, and so which listings left the feed, depends on the date order.
        url = newest_first(await backend.engine.market.check_url(requested_url))
    except (CatalogueUrlRefused, InvalidCatalogueUrl) as err:
        raise catalogue_url_refused(requested_url, err.reason, doing="monitored") from err
    limits = await plan_limits(workspace_id, store=store)
    interval = data.interval_seconds or max(
        settings.default_poll_seconds, settings.min_poll_seconds, limits.min_poll_seconds
    )
    if interval < settings.min_poll_seconds:
        raise BadRequest(
            f"interval_seconds must be at least {settings.min_poll_seconds}",
            code="interval_too_short",
            suggest=[f"Use interval_seconds >= {settings.min_poll_seconds}"],
            extra={"min_interval_seconds": settings.min_poll_seconds},
        )
    slots = await require_active_monitor_slot(store, workspace_id)
    await require_poll_interval(workspace_id, interval, store=store)
    try:
        new = NewMonitor(
            monitor_id=new_id("mon"),
            workspace_id=workspace_id,
            url=url,
            label=data.label.strip() if data.label and data.label.strip() else None,
            interval_seconds=interval,
            page_cap=settings.page_cap,
            source_analysis_id=data.analysis_id,
        )
        monitor = await backend.engine.start_monitor(new, at_most=slots)
    except QuotaFull as full:  # the slot went to a simultaneous start
        raise await refused(workspace_id, full, store=store) from full
    return monitor


async def require_active_monitor_slot(store: Store, workspace_id: str) -> int:
    """The plan's active-monitor quota; `quota_exceeded` (or `plan_required`) when full.
    Returns the quota, for the write to check again atomically (`at_most`): this count is
    a moment old, and simultaneous requests all read the same one."""
    in_use = await store.monitors.count_active(workspace_id)
    limits = await require_quota(workspace_id, "active_monitors", in_use, store=store)
    return limits.active_monitors


async def catalogue_url_of_analysis(store: Store, workspace_id: str, analysis_id: str) -> str:
    """The catalogue URL an analysis looked at: the scraped URL, or its monitor's URL.

    `NotFound` for another workspace's (or no) analysis; `Conflict` `no_catalogue_url` for
    one that has none (an import whose export named no URL).
    """
    analysis = await analysis_in_workspace(store, analysis_id, workspace_id)
    if analysis.source_url:
        return analysis.source_url
    if analysis.run_id is not None:
        run = await store.runs.get(analysis.run_id, workspace_id)
        if run is not None and run.monitor_id is not None:
            monitor = await store.monitors.get(run.monitor_id, workspace_id)
            if monitor is not None:
                return monitor.url
    raise Conflict(
        "This analysis names no catalogue URL to monitor",
        code="no_catalogue_url",
        suggest=["Start the monitor with the catalogue URL instead"],
    )


async def counted(store: Store, monitors: list[MonitorRecord]) -> list[MonitorOut]:
    """`monitor_out` with each monitor's listing counts (the list endpoint, MCP and the web
    list): the counts are kept on the monitor's row, so each is one primary-key read."""
    counts = store.monitors.listing_counts
    return [monitor_out(m, await counts(m.id)) for m in monitors]


async def delete_monitor_in(backend: Backend, monitor: MonitorRecord) -> None:
    """Stop the monitor's actor and delete it with all its data (the REST view and the web
    page); `NotFound` when it went meanwhile."""
    deleted(await backend.engine.delete_monitor(monitor), "monitor")


async def pause_monitor_in(backend: Backend, monitor: MonitorRecord) -> None:
    """Stop polling (the REST view and the web page); `Busy` while the engine is busy."""
    try:
        await backend.engine.pause(monitor)
    except EngineBusy as err:
        raise Busy(str(err), headers={"Retry-After": "1"}) from err


async def resume_monitor_in(backend: Backend, monitor: MonitorRecord) -> None:
    """Resume polling (quota-checked when paused after its bootstrap: active, errored and
    bootstrapping monitors already hold their slot); `Busy` while the engine is busy.

    The slot is taken before the engine is told: the store writes `active` in the
    transaction that counts the slots under the workspace's quota lock (`claim_slot`), as
    the actor's own write would come after simultaneous resumes had all counted. A paused
    actor writes nothing meanwhile, and its `Resume` writes `active` again. If it is `Busy`
    the slot stays taken: the monitor is `active` where its actor (or an adopting node)
    reads it, and resuming again finds it so."""
    store = backend.store
    if monitor.status == "paused" and monitor.bootstrapped_at is not None:
        slots = await require_active_monitor_slot(store, monitor.workspace_id)
        try:
            await store.monitors.claim_slot(monitor.id, monitor.workspace_id, slots)
        except QuotaFull as full:  # the slot went to a simultaneous resume or start
            raise await refused(monitor.workspace_id, full, store=store) from full
    try:
        await backend.engine.resume(monitor)
    except EngineBusy as err:
        raise Busy(str(err), headers={"Retry-After": "1"}) from err
