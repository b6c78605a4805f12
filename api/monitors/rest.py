"""`/api/monitoring/*`: start, list, read, pause/resume, delete and export monitors.

Every query is scoped to the caller's workspace: another workspace's monitor is a 404,
indistinguishable from one that does not exist.
"""

from __future__ import annotations

import math
from decimal import Decimal
from urllib.parse import urlsplit

from quart import Blueprint, Response
from quart_schema import (
    document_response,
    validate_querystring,
    validate_request,
    validate_response,
)

from api.billing.quotas import plan_limits, require_poll_interval, require_quota
from api.catalogue_urls import refuse_unaccepted_site
from api.http.auth import current_principal
from api.http.errors import ApiError, BadRequest, Conflict, NotFound
from api.http.json_encoding import api_json
from api.http.openapi import operation
from api.http.openapi_links import MONITOR
from api.http.security import new_id
from api.monitors.export import EXPORT_SCHEMA, stream_export
from api.monitors.schemas import (
    ListingsPage,
    ListingsQuery,
    MonitorList,
    MonitorOut,
    StartMonitorRequest,
)
from api.services import services
from engine import CatalogueUrlRefused, EngineBusy
from scrapers import InvalidCatalogueUrl, newest_first
from store import (
    FAILURE_EXPLAINED,
    LISTING_STATES,
    ListingFilter,
    ListingRecord,
    MonitorRecord,
    record_fields,
)

blueprint = Blueprint("monitoring", __name__, url_prefix="/api/monitoring")


class Busy(ApiError):
    status, code = 429, "busy"


def monitor_out(
    monitor: MonitorRecord,
    counts: dict[str, int] | None = None,
    market_profile: str | None = None,
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
        }
    )


async def market_profile_of(monitor: MonitorRecord) -> str | None:
    """The wire profile the monitor's site speaks: the configured one, or what `auto` found
    and remembered for every node (None until a check has read the site)."""
    svc = services()
    if svc.settings.market_profile != "auto":
        return svc.settings.market_profile
    parts = urlsplit(monitor.url)
    return await svc.store.market.recall_profile(f"{parts.scheme}://{parts.netloc}")


def listing_out(listing: ListingRecord) -> dict[str, object]:
    """A listing's fields for `ListingOut`, with `likely` (sold by absence) derived."""
    fields = record_fields(listing)
    fields["likely"] = listing.state == "sold" and listing.state_evidence == "absence"
    return fields


async def owned_monitor(monitor_id: str) -> MonitorRecord:
    monitor = await services().store.monitors.get(monitor_id, current_principal().workspace_id)
    if monitor is None:
        raise NotFound("monitor")
    return monitor


@blueprint.post("/start")
@operation("startMonitor", errors=(409,), links=MONITOR.links())
@validate_request(StartMonitorRequest)
@validate_response(MonitorOut, 202)
async def start_monitor(data: StartMonitorRequest) -> tuple[MonitorOut, int]:
    """Start a monitor on a catalogue URL (or from an analysis); 202 at once, status `paused`.

    The bootstrap scrape runs in the background and moves the monitor to `active`.
    """
    return monitor_out(await start_monitor_in(current_principal().workspace_id, data)), 202


async def start_monitor_in(workspace_id: str, data: StartMonitorRequest) -> MonitorRecord:
    """Start a monitor in `workspace_id` (the REST view and the MCP `create_monitor` tool).

    Raises `ApiError`s: `NotFound` (analysis), `BadRequest` `url_refused` or
    `interval_too_short`; the monitor is `paused` until its background bootstrap ends.
    """
    svc = services()
    settings = svc.settings
    requested_url = data.url
    if data.analysis_id is not None:
        requested_url = await catalogue_url_of_analysis(workspace_id, data.analysis_id)
    assert requested_url is not None
    refuse_unaccepted_site(requested_url, settings, doing="monitored")
    try:
        # A monitor reads the feed newest first whatever the URL says: where its window of
        # pages ends, and so which listings left the feed, depends on the date order.
        url = newest_first(await svc.engine.market.check_url(requested_url))
    except (CatalogueUrlRefused, InvalidCatalogueUrl) as err:
        raise BadRequest(
            f"This catalogue URL cannot be monitored: {err.reason}",
            code="url_refused",
            suggest=["Copy a catalogue URL of the marketplace from the browser's address bar"],
        ) from err
    limits = await plan_limits(workspace_id)
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
    await require_active_monitor_slot(workspace_id)
    await require_poll_interval(workspace_id, interval)
    monitor = await svc.engine.start_monitor(
        monitor_id=new_id("mon"),
        workspace_id=workspace_id,
        url=url,
        label=data.label.strip() if data.label and data.label.strip() else None,
        interval_seconds=interval,
        page_cap=settings.page_cap,
        source_analysis_id=data.analysis_id,
    )
    return monitor


async def require_active_monitor_slot(workspace_id: str) -> None:
    """The plan's active-monitor quota; `quota_exceeded` (or `plan_required`) when full."""
    in_use = await services().store.monitors.count_active(workspace_id)
    await require_quota(workspace_id, "active_monitors", in_use)


async def catalogue_url_of_analysis(workspace_id: str, analysis_id: str) -> str:
    """The catalogue URL an analysis looked at: the scraped URL, or its monitor's URL.

    `NotFound` for another workspace's (or no) analysis; `Conflict` `no_catalogue_url` for
    one that has none (an import whose export named no URL).
    """
    store = services().store
    analysis = await store.runs.analysis(analysis_id, workspace_id)
    if analysis is None:
        raise NotFound("analysis")
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


@blueprint.get("")
@operation("listMonitors")
@validate_response(MonitorList, 200)
async def list_monitors() -> MonitorList:
    """The workspace's monitors, newest first, each with its listing counts by state."""
    monitors = await services().store.monitors.in_workspace(current_principal().workspace_id)
    return MonitorList(monitors=await counted(monitors))


async def counted(monitors: list[MonitorRecord]) -> list[MonitorOut]:
    """`monitor_out` with each monitor's listing counts (the list endpoint, MCP and the web
    list): the counts are kept on the monitor's row, so each is one primary-key read."""
    counts = services().store.monitors.listing_counts
    return [monitor_out(m, await counts(m.id)) for m in monitors]


@blueprint.get("/<id:monitor_id>")
@operation("getMonitor", links=MONITOR.links())
@validate_response(MonitorOut, 200)
async def get_monitor(monitor_id: str) -> MonitorOut:
    """Status, listing counts by state (with likely sales), last and next poll, errors."""
    monitor = await owned_monitor(monitor_id)
    counts = await services().store.monitors.listing_counts(monitor.id)
    return monitor_out(monitor, counts, await market_profile_of(monitor))


@blueprint.delete("/<id:monitor_id>")
@operation("deleteMonitor", success=(204, "Deleted; no body", None))
async def delete_monitor(monitor_id: str) -> Response:
    """Stop the monitor's actor and delete the monitor with all its data. 204."""
    monitor = await owned_monitor(monitor_id)
    if not await services().engine.delete_monitor(monitor):
        raise NotFound("monitor")
    return Response(b"", status=204)


@blueprint.post("/<id:monitor_id>/pause")
@operation("pauseMonitor", links=MONITOR.links())
@validate_response(MonitorOut, 200)
async def pause_monitor(monitor_id: str) -> MonitorOut:
    """Stop polling until resumed (data is kept)."""
    await pause_monitor_in(await owned_monitor(monitor_id))
    return monitor_out(await owned_monitor(monitor_id))


async def pause_monitor_in(monitor: MonitorRecord) -> None:
    """Stop polling (the REST view and the web page); `Busy` while the engine is busy."""
    try:
        await services().engine.pause(monitor)
    except EngineBusy as err:
        raise Busy(str(err), headers={"Retry-After": "1"}) from err


@blueprint.post("/<id:monitor_id>/resume")
@operation("resumeMonitor", links=MONITOR.links())
@validate_response(MonitorOut, 200)
async def resume_monitor(monitor_id: str) -> MonitorOut:
    """Resume polling, also out of `error` (the error count starts again); polls at once."""
    await resume_monitor_in(await owned_monitor(monitor_id))
    return monitor_out(await owned_monitor(monitor_id))


async def resume_monitor_in(monitor: MonitorRecord) -> None:
    """Resume polling (quota-checked when paused: active and errored monitors already hold
    their slot); `Busy` while the engine is busy."""
    if monitor.status == "paused":
        await require_active_monitor_slot(monitor.workspace_id)
    try:
        await services().engine.resume(monitor)
    except EngineBusy as err:
        raise Busy(str(err), headers={"Retry-After": "1"}) from err


@blueprint.get("/<id:monitor_id>/listings")
@operation("listMonitorListings")
@validate_querystring(ListingsQuery)
@document_response(ListingsPage, 200)
async def list_listings(monitor_id: str, query_args: ListingsQuery) -> Response:
    """One page of the monitor's listings in a state (`all` for every state), by item id
    unless `sort` says otherwise, narrowed to a niche by `category`, `brand`, `size`,
    `condition` and a price range when given."""
    q = query_args
    states = LISTING_STATES if q.state == "all" else (q.state,)
    wanted = ListingFilter(
        states=states, category_id=q.category, brand=q.brand, size=q.size,
        condition=q.condition, price_min=_price(q.price_min), price_max=_price(q.price_max),
        sort=q.sort,
    )  # fmt: skip
    workspace_id = current_principal().workspace_id
    monitors = services().store.monitors
    # One transaction checks the workspace and reads the page: the API's hottest read.
    page = (
        await monitors.filtered_listings(
            monitor_id, wanted, q.page, q.page_size, workspace_id=workspace_id
        )
        if wanted.narrows
        else await monitors.listings(
            monitor_id, states, q.page, q.page_size, workspace_id=workspace_id
        )
    )
    if page is None:
        raise NotFound("monitor")
    body = {
        "listings": [listing_out(listing) for listing in page.listings],
        "state": query_args.state,
        "page": query_args.page,
        "page_size": query_args.page_size,
        "total": page.total,
        "pages": max(1, math.ceil(page.total / query_args.page_size)),
    }
    # Written straight from the records, which are already what `ListingsPage` says (a
    # test compares the two encodings): validating 50 listings into models only to dump
    # them again was a tenth of the API's hottest read.
    return Response(api_json(body), content_type="application/json")


def _price(value: float | None) -> Decimal | None:
    """A query's price as the stored prices' type (its shortest decimal spelling)."""
    return None if value is None else Decimal(repr(value))


@blueprint.get("/<id:monitor_id>/export")
@operation("exportMonitor")
async def export_monitor(monitor_id: str) -> Response:
    """The monitor's full captured history as one self-describing JSON document (streamed).

    Format `nichescope.monitor-export` version 2 (how each state was established, likely
    sales by absence); its JSON Schema is served at
    `/api/monitoring/export-schema`. `POST /api/analysis/import-monitoring` takes it back.
    """
    monitor = await owned_monitor(monitor_id)
    filename = f"nichescope-monitor-{monitor.id}.json"
    response = Response(
        stream_export(services().store, monitor),
        content_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
    # Quart cuts responses after RESPONSE_TIMEOUT (60 s); a large history streams for longer,
    # and the client, not a timer, decides when to give up.
    response.timeout = None
    return response


@blueprint.get("/export-schema")
@operation("getMonitorExportSchema", access="public")
async def export_schema() -> dict[str, object]:
    """The JSON Schema of the monitor export document."""
    return EXPORT_SCHEMA
