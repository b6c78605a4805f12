"""`/api/analyses/*` and `/api/dashboard`: the analyses runs produce, and the overview."""

from __future__ import annotations

from typing import Any

import orjson
import trio
from quart import Blueprint, Response, request
from quart_schema import (
    document_response,
    validate_querystring,
    validate_request,
    validate_response,
)

from api.analyses.actions import (
    GRAPH_NAMES,
    AnalysisRead,
    analysis_out,
    graph_links,
    parse_parts,
    read_analysis,
    summaries,
    summary,
)
from api.analyses.cache import AnalysisParts, etag, matches
from api.analyses.choice import (
    below_floor,
    choice_fields,
    dashboard_choice,
    depth_of,
    pin_in,
    title_of,
    unpin_in,
)
from api.analyses.imports import import_from_request
from api.analyses.schemas import (
    AnalysisList,
    AnalysisOut,
    DashboardPin,
    DashboardQuery,
    ImportQuery,
    PinRequest,
)
from api.http.auth import current_principal
from api.http.errors import NotFound, found
from api.http.json_encoding import api_json
from api.http.limits import allow_body
from api.http.openapi import DELETED, operation
from api.http.openapi_links import ANALYSIS, RUN
from api.http.schemas import PageQuery
from api.naming import analysis_title
from api.runs.actions import run_fields
from api.services import services
from engine import render_svg

blueprint = Blueprint("analyses", __name__)

DASHBOARD_RUNS = 10
# The graph name as a route converter, so that the OpenAPI document lists the four names
# (`enum`) and clients, generators and the links below reach real graphs.
GRAPH_NAME = "any({}):name".format(", ".join(f'"{name}"' for name in GRAPH_NAMES))
# What an answer that is one analysis feeds: its own operations and its run's (none if imported).
ANALYSIS_LINKS = (*ANALYSIS.links(), *RUN.links("run_id"))


@blueprint.get("/api/analyses")
@operation("listAnalyses")
@validate_querystring(PageQuery)
@validate_response(AnalysisList, 200)
async def list_analyses(query_args: PageQuery) -> AnalysisList:
    """The workspace's analyses, newest first, paged."""
    analyses, total = await summaries(
        services().store, current_principal().workspace_id, query_args.offset, query_args.page_size
    )
    return AnalysisList(analyses=analyses, **query_args.fields(total))


@blueprint.get("/api/analyses/<id:analysis_id>")
@operation("getAnalysis", links=ANALYSIS_LINKS)
@document_response(AnalysisOut, 200)
async def get_analysis(analysis_id: str) -> Response:
    """Ranked niches, alerts, evidence notes, and links to the four graphs.

    Answered with an `ETag`: an analysis never changes once stored (only its title follows
    its run's and monitor's names), so a client that sends it back in `If-None-Match` gets
    `304 Not Modified` and no body. A deleted analysis is a 404 at once.
    """
    read = await _read(analysis_id)
    tag = etag(read.analysis.id, read.title)
    if matches(request.headers.get("If-None-Match"), tag):
        return not_modified(tag)
    body = {
        **summary(read.analysis, read.title).model_dump(mode="json"),
        "result": orjson.Fragment(read.parts.result),
        "graphs": graph_links(read.analysis.id),
    }
    return cached_json(orjson.dumps(body), tag)


def cached_json(body: bytes, tag: str, content_type: str = "application/json") -> Response:
    """An answer that never changes under its tag: kept by the client, asked again."""
    return _tagged(Response(body, content_type=content_type), tag)


def not_modified(tag: str) -> Response:
    return _tagged(Response(b"", status=304), tag)


def _tagged(response: Response, tag: str) -> Response:
    response.headers["ETag"] = tag
    # Stored by the browser, but asked again every time: a delete must show at once.
    response.headers["Cache-Control"] = "private, no-cache"
    return response


@blueprint.get(f"/api/analyses/<id:analysis_id>/graphs/<{GRAPH_NAME}>.json")
@operation("getAnalysisGraphSpec")
async def graph_spec(analysis_id: str, name: str) -> Response:
    """One of the four graphs as a Vega-Lite spec with its data inline (with an `ETag`, as
    the analysis)."""
    read, spec = await _graph(analysis_id, name)
    tag = etag(read.analysis.id, name, "json")
    if matches(request.headers.get("If-None-Match"), tag):
        return not_modified(tag)
    return cached_json(spec, tag)


@blueprint.get(f"/api/analyses/<id:analysis_id>/graphs/<{GRAPH_NAME}>.svg")
@operation("getAnalysisGraphSvg", success=(200, "The graph as SVG", "image/svg+xml"))
async def graph_svg(analysis_id: str, name: str) -> Response:
    """One of the four graphs rendered server-side as SVG (no browser, no network), with an
    `ETag`; rendered once per process."""
    read, spec = await _graph(analysis_id, name)
    tag = etag(read.analysis.id, name, "svg")
    if matches(request.headers.get("If-None-Match"), tag):
        return not_modified(tag)
    svg = read.parts.svgs.get(name)
    if svg is None:
        rendered = await trio.to_thread.run_sync(render_svg, orjson.loads(spec))
        svg = rendered.encode() if isinstance(rendered, str) else rendered
        read.parts.svgs[name] = svg
        services().analyses.resized(read.analysis.id)
    return cached_json(svg, tag, content_type="image/svg+xml; charset=utf-8")


async def _read(analysis_id: str) -> AnalysisRead:
    """The caller's analysis with its document's parts; `NotFound`."""
    svc = services()
    return await read_analysis(
        svc.store, svc.analyses, analysis_id, current_principal().workspace_id
    )


async def _graph(analysis_id: str, name: str) -> tuple[AnalysisRead, bytes]:
    """The caller's analysis and its graph `name` (a Vega-Lite spec, encoded); `NotFound`."""
    read = await _read(analysis_id)
    spec = read.parts.graphs.get(name)
    if name not in GRAPH_NAMES or spec is None:
        raise NotFound("graph")
    return read, spec


@blueprint.post("/api/analysis/import-monitoring")
@operation(
    "importMonitoringExport",
    links=ANALYSIS_LINKS,
    body={
        "application/json": {"$ref": "#/components/schemas/MonitorExport"},
        "multipart/form-data": {
            "type": "object",
            "required": ["file"],
            "properties": {"file": {"type": "string", "format": "binary"}},
        },
    },
)
@allow_body("import_max_bytes")
@validate_querystring(ImportQuery)
@validate_response(AnalysisOut, 201)
async def import_monitoring(query_args: ImportQuery) -> tuple[AnalysisOut, int]:
    """A new analysis from a monitor export, with the four graphs re-rendered; no scrape.

    Takes the export (format version 2, or version 1 whose sales count as confirmed) as the
    JSON body, or as the multipart file field `file`. A malformed, truncated, wrong-version
    or oversized export is a 4xx and nothing is stored.
    """
    principal = current_principal()
    svc = services()
    analysis = await import_from_request(
        svc.store,
        svc.import_slots,
        principal.workspace_id,
        include_likely_sales=query_args.include_likely_sales,
    )
    return analysis_out(analysis, analysis_title(analysis, None, None)), 201


@blueprint.get("/api/dashboard")
@operation("getDashboard")
@validate_querystring(DashboardQuery)
async def dashboard(query_args: DashboardQuery) -> Response:
    """Top niches of the dashboard's analysis, and recent runs.

    The analysis is `run_id`'s when given; else the pinned one (`PUT /api/dashboard/pin`);
    else the most recent whose evidence clears the trust floor (`trust_floor`: at least 7
    days of history and 30 sales); else the most recent, with a `caveat` saying what it
    lacks. `chosen_by` says which (`asked`, `pinned`, `trusted`, `latest`) and
    `evidence_depth` what it rests on; `newer_analysis` is the most recent analysis when it
    was passed over for being below the floor. The `analysis` also says which sales its
    niches rank on: `sales_basis`, `sales_basis_reason` and `sales_basis_note`, a sentence to
    show with them (as in the analysis' `result`).
    """
    svc = services()
    workspace_id = current_principal().workspace_id
    wanted = query_args.include_top_niches
    analysis_id: str | None = None
    if query_args.run_id is not None:
        run = found(await svc.store.runs.get(query_args.run_id, workspace_id), "run")
        analysis_id = run.analysis_id  # None until it has one: no analysis shown
    choice, recent = await dashboard_choice(
        svc.store,
        workspace_id,
        analysis_id=analysis_id if wanted else None,
        by_default=wanted and query_args.run_id is None,
        recent_runs=DASHBOARD_RUNS if query_args.include_recent_runs else 0,
    )
    body: dict[str, Any] = {"analysis": None}
    if wanted:
        body["top_niches"] = orjson.Fragment(b"[]")
        origin = choice.origin
        if origin is not None:
            parts = await _parts(origin.analysis.id, workspace_id)
            body["top_niches"] = orjson.Fragment(parts.top_niches)
            body["analysis"] = {
                **summary(origin.analysis, title_of(origin)).model_dump(mode="json"),
                "graphs": graph_links(origin.analysis.id),
                # Which sales the top niches rank on, and the sentence to show with them.
                **parts.sales_basis,
                **choice_fields(choice),
            }
        newer = choice.newer
        body["newer_analysis"] = (
            None
            if newer is None
            else {
                **summary(newer.analysis, title_of(newer)).model_dump(mode="json"),
                "caveat": below_floor(depth_of(newer.analysis)),
            }
        )
    if query_args.include_recent_runs:
        body["recent_runs"] = [run_fields(r) for r in recent]
    return Response(api_json(body), content_type="application/json")


async def _parts(analysis_id: str, workspace_id: str) -> AnalysisParts:
    """The analysis' parsed parts, from the cache or read and parsed now."""
    svc = services()
    parts = svc.analyses.get(analysis_id)
    if parts is None:
        stored = await svc.store.runs.analysis_result(analysis_id, workspace_id)
        parts = await parse_parts(svc.analyses, analysis_id, stored or "{}")
    return parts


@blueprint.get("/api/dashboard/pin")
@operation("getDashboardPin")
@validate_response(DashboardPin, 200)
async def get_dashboard_pin() -> DashboardPin:
    """The analysis pinned to the dashboard; `analysis_id` null when none is (the dashboard
    then shows the most recent analysis that clears the trust floor)."""
    pinned = await services().store.runs.pinned(current_principal().workspace_id)
    return DashboardPin(analysis_id=pinned)


@blueprint.put("/api/dashboard/pin")
@operation("pinDashboardAnalysis")
@validate_request(PinRequest)
@validate_response(DashboardPin, 200)
async def pin_dashboard_analysis(data: PinRequest) -> DashboardPin:
    """Show this analysis on the dashboard whatever is analysed later, until unpinned or
    deleted (it replaces any pin before). 404 for an analysis not in your workspace."""
    await pin_in(services().store, current_principal().workspace_id, data.analysis_id)
    return DashboardPin(analysis_id=data.analysis_id)


@blueprint.delete("/api/dashboard/pin")
@operation("unpinDashboardAnalysis", success=DELETED)
async def unpin_dashboard_analysis() -> Response:
    """Back to the most recent analysis that clears the trust floor. 204, pinned or not."""
    await unpin_in(services().store, current_principal().workspace_id)
    return Response(b"", status=204)
