"""`/api/analyses/*` and `/api/dashboard`: the analyses runs produce, and the overview."""

from __future__ import annotations

import json
from typing import Any

import trio
from quart import Blueprint, Response
from quart_schema import validate_querystring, validate_response

from engine import render_svg
from store import AnalysisRecord

from .auth import current_principal
from .errors import NotFound
from .imports import import_from_request
from .limits import allow_body
from .naming import analysis_title, analysis_titles, title_of_analysis
from .openapi import operation
from .openapi_links import ANALYSIS, RUN
from .run_schemas import (
    AnalysisList,
    AnalysisOut,
    AnalysisSummary,
    DashboardQuery,
    ImportQuery,
    PageQuery,
)
from .runs import run_out
from .services import services

blueprint = Blueprint("analyses", __name__)

GRAPH_NAMES = ("niche-map", "price-bands", "time-to-sell", "market-flow")
DASHBOARD_NICHES = 10
DASHBOARD_RUNS = 10
# The graph name as a route converter, so that the OpenAPI document lists the four names
# (`enum`) and clients, generators and the links below reach real graphs.
GRAPH_NAME = "any({}):name".format(", ".join(f'"{name}"' for name in GRAPH_NAMES))
# What an answer that is one analysis feeds: its own operations and its run's (none if imported).
ANALYSIS_LINKS = (*ANALYSIS.links(), *RUN.links("run_id"))


def summary(analysis: AnalysisRecord, title: str) -> AnalysisSummary:
    """The list entry of `analysis`; `title` from `naming` (what it is of, never an id)."""
    return AnalysisSummary(
        id=analysis.id,
        title=title,
        run_id=analysis.run_id,
        source=analysis.source,
        source_url=analysis.source_url,
        created_at=analysis.created_at,
    )


def graph_links(analysis_id: str) -> dict[str, dict[str, str]]:
    base = f"/api/analyses/{analysis_id}/graphs"
    return {
        name: {"vega_lite": f"{base}/{name}.json", "svg": f"{base}/{name}.svg"}
        for name in GRAPH_NAMES
    }


async def owned_analysis(analysis_id: str) -> AnalysisRecord:
    return await analysis_in_workspace(analysis_id, current_principal().workspace_id)


async def analysis_in_workspace(analysis_id: str, workspace_id: str) -> AnalysisRecord:
    """The analysis; `NotFound` when it does not exist or belongs to another workspace."""
    analysis = await services().store.runs.analysis(analysis_id, workspace_id)
    if analysis is None:
        raise NotFound("analysis")
    return analysis


@blueprint.get("/api/analyses")
@operation("listAnalyses")
@validate_querystring(PageQuery)
@validate_response(AnalysisList, 200)
async def list_analyses(query_args: PageQuery) -> AnalysisList:
    """The workspace's analyses, newest first, paged."""
    workspace_id = current_principal().workspace_id
    analyses, total = await services().store.runs.analyses(
        workspace_id, (query_args.page - 1) * query_args.page_size, query_args.page_size
    )
    titles = await analysis_titles(workspace_id, analyses)
    return AnalysisList(
        analyses=[summary(a, titles[a.id]) for a in analyses],
        page=query_args.page,
        page_size=query_args.page_size,
        total=total,
    )


@blueprint.get("/api/analyses/<id:analysis_id>")
@operation("getAnalysis", links=ANALYSIS_LINKS)
@validate_response(AnalysisOut, 200)
async def get_analysis(analysis_id: str) -> AnalysisOut:
    """Ranked niches, alerts, evidence notes, and links to the four graphs."""
    analysis = await owned_analysis(analysis_id)
    return analysis_out(analysis, await title_of_analysis(analysis))


def analysis_out(analysis: AnalysisRecord, title: str) -> AnalysisOut:
    # The graph specs are served on their own routes; the body links to them.
    result = {k: v for k, v in _stored_document(analysis).items() if k != "graphs"}
    return AnalysisOut(
        **summary(analysis, title).model_dump(), result=result, graphs=graph_links(analysis.id)
    )


def _stored_document(analysis: AnalysisRecord) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(analysis.result_json)
    return document


@blueprint.get(f"/api/analyses/<id:analysis_id>/graphs/<{GRAPH_NAME}>.json")
@operation("getAnalysisGraphSpec")
async def graph_spec(analysis_id: str, name: str) -> dict[str, Any]:
    """One of the four graphs as a Vega-Lite spec with its data inline."""
    analysis = await owned_analysis(analysis_id)
    spec = _stored_document(analysis).get("graphs", {}).get(name)
    if name not in GRAPH_NAMES or not isinstance(spec, dict):
        raise NotFound("graph")
    return spec


@blueprint.get(f"/api/analyses/<id:analysis_id>/graphs/<{GRAPH_NAME}>.svg")
@operation("getAnalysisGraphSvg", success=(200, "The graph as SVG", "image/svg+xml"))
async def graph_svg(analysis_id: str, name: str) -> Response:
    """One of the four graphs rendered server-side as SVG (no browser, no network)."""
    spec = await graph_spec(analysis_id, name)
    svg = await trio.to_thread.run_sync(render_svg, spec)
    return Response(svg, content_type="image/svg+xml; charset=utf-8")


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
    analysis = await import_from_request(
        principal.workspace_id, include_likely_sales=query_args.include_likely_sales
    )
    return analysis_out(analysis, analysis_title(analysis, None, None)), 201


@blueprint.get("/api/dashboard")
@operation("getDashboard")
@validate_querystring(DashboardQuery)
async def dashboard(query_args: DashboardQuery) -> dict[str, Any]:
    """Top niches (of `run_id`'s analysis, or the latest analysis) and recent runs."""
    svc = services()
    principal = current_principal()
    body: dict[str, Any] = {"analysis": None}
    analysis: AnalysisRecord | None = None
    if query_args.run_id is not None:
        run = await svc.store.runs.get(query_args.run_id, principal.workspace_id)
        if run is None:
            raise NotFound("run")
        if run.analysis_id is not None:
            analysis = await svc.store.runs.analysis(run.analysis_id, principal.workspace_id)
    else:
        latest, _ = await svc.store.runs.analyses(principal.workspace_id, 0, 1)
        analysis = latest[0] if latest else None
    if query_args.include_top_niches:
        niches: list[Any] = []
        if analysis is not None:
            niches = json.loads(analysis.result_json).get("niches", [])[:DASHBOARD_NICHES]
            body["analysis"] = {
                **summary(analysis, await title_of_analysis(analysis)).model_dump(mode="json"),
                "graphs": graph_links(analysis.id),
            }
        body["top_niches"] = niches
    if query_args.include_recent_runs:
        runs, _ = await svc.store.runs.in_workspace(principal.workspace_id, 0, DASHBOARD_RUNS)
        body["recent_runs"] = [run_out(r).model_dump(mode="json") for r in runs]
    return body
