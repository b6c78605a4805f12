"""`/api/monitoring/*`: start, list, read, pause/resume, delete and export monitors.

Every query is scoped to the caller's workspace: another workspace's monitor is a 404,
indistinguishable from one that does not exist.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from decimal import Decimal

from quart import Blueprint, Response
from quart_schema import (
    document_response,
    validate_querystring,
    validate_request,
    validate_response,
)

from api.backend import Backend
from api.http.auth import current_principal
from api.http.errors import NotFound
from api.http.json_encoding import api_json
from api.http.openapi import DELETED, operation
from api.http.openapi_links import MONITOR
from api.http.schemas import page_count
from api.monitors.actions import (
    counted,
    delete_monitor_in,
    listing_out,
    monitor_out,
    one_monitor_out,
    owned_monitor,
    pause_monitor_in,
    resume_monitor_in,
    start_monitor_in,
)
from api.monitors.export import EXPORT_SCHEMA, stream_export
from api.monitors.schemas import (
    ListingsPage,
    ListingsQuery,
    MonitorList,
    MonitorOut,
    StartMonitorRequest,
)
from api.services import services
from store import (
    LISTING_STATES,
    EncodedListingPage,
    ListingFilter,
    ListingPage,
    MonitorRecord,
)

blueprint = Blueprint("monitoring", __name__, url_prefix="/api/monitoring")


@blueprint.post("/start")
@operation("startMonitor", errors=(409,), links=MONITOR.links())
@validate_request(StartMonitorRequest)
@validate_response(MonitorOut, 202)
async def start_monitor(data: StartMonitorRequest) -> tuple[MonitorOut, int]:
    """Start a monitor on a catalogue URL (or from an analysis); 202 at once, status `paused`.

    The bootstrap scrape runs in the background and moves the monitor to `active`.
    """
    workspace_id = current_principal().workspace_id
    return monitor_out(await start_monitor_in(services().backend, workspace_id, data)), 202


@blueprint.get("")
@operation("listMonitors")
@validate_response(MonitorList, 200)
async def list_monitors() -> MonitorList:
    """The workspace's monitors, newest first, each with its listing counts by state."""
    store = services().store
    monitors = await store.monitors.in_workspace(current_principal().workspace_id)
    return MonitorList(monitors=await counted(store, monitors))


@blueprint.get("/<id:monitor_id>")
@operation("getMonitor", links=MONITOR.links())
@validate_response(MonitorOut, 200)
async def get_monitor(monitor_id: str) -> MonitorOut:
    """Status, listing counts by state (with likely sales), last and next poll, errors."""
    return await one_monitor_out(services().backend, await _owned(monitor_id))


@blueprint.delete("/<id:monitor_id>")
@operation("deleteMonitor", success=DELETED)
async def delete_monitor(monitor_id: str) -> Response:
    """Stop the monitor's actor and delete the monitor with all its data. 204."""
    await delete_monitor_in(services().backend, await _owned(monitor_id))
    return Response(b"", status=204)


@blueprint.post("/<id:monitor_id>/pause")
@operation("pauseMonitor", links=MONITOR.links())
@validate_response(MonitorOut, 200)
async def pause_monitor(monitor_id: str) -> MonitorOut:
    """Stop polling until resumed (data is kept)."""
    return await _changed(monitor_id, pause_monitor_in)


@blueprint.post("/<id:monitor_id>/resume")
@operation("resumeMonitor", links=MONITOR.links())
@validate_response(MonitorOut, 200)
async def resume_monitor(monitor_id: str) -> MonitorOut:
    """Resume polling, also out of `error` (the error count starts again); polls at once."""
    return await _changed(monitor_id, resume_monitor_in)


async def _changed(
    monitor_id: str, change: Callable[[Backend, MonitorRecord], Awaitable[None]]
) -> MonitorOut:
    """The caller's monitor after `change` (pause, resume), read again."""
    await change(services().backend, await _owned(monitor_id))
    return monitor_out(await _owned(monitor_id))


async def _owned(monitor_id: str) -> MonitorRecord:
    """The API caller's monitor `monitor_id`; `NotFound` for another workspace's or none."""
    return await owned_monitor(services().store, monitor_id, current_principal().workspace_id)


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
    page: ListingPage | EncodedListingPage | None
    if wanted.narrows:
        page = await monitors.filtered_listings(
            monitor_id, wanted, q.page, q.page_size, workspace_id=workspace_id
        )
    else:
        page = await monitors.encoded_listings(
            monitor_id, states, q.page, q.page_size, workspace_id=workspace_id
        )
    if page is None:  # not found, or another workspace's
        raise NotFound("monitor")
    # Written straight from the records, which are already what `ListingsPage` says (a
    # test compares the two encodings): validating 50 listings into models only to dump
    # them again was a tenth of the API's hottest read. The database wrote an unfiltered
    # page's listings as JSON itself (`store/monitors/listing_json.py`): spliced in as it is.
    if isinstance(page, EncodedListingPage):
        listings = page.listings_json
    else:
        listings = api_json([listing_out(listing) for listing in page.listings])
    rest = api_json({
        "state": query_args.state, "page": query_args.page, "page_size": query_args.page_size,
        "total": page.total, "pages": page_count(page.total, query_args.page_size),
    })  # fmt: skip
    return Response(b'{"listings":' + listings + b"," + rest[1:], content_type="application/json")


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
    monitor = await _owned(monitor_id)
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
