"""Analysis use cases shared by the REST handlers (`rest.py`), the web pages and the MCP tools.

Reading an analysis of the caller's workspace (its document parsed once per process, see
`cache.py`), and the shapes its answers take. Another workspace's analysis is a 404.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import trio

from api.analyses.cache import AnalysisCache, AnalysisParts
from api.analyses.schemas import AnalysisOut, AnalysisSummary
from api.http.errors import NotFound, found
from api.naming import analysis_title, analysis_titles
from engine.analysis import with_sales_basis
from store import AnalysisRecord, Store, record_fields

DASHBOARD_NICHES = 10  # niches an analysis' cached parts keep ready for the dashboard
GRAPH_NAMES = ("niche-map", "price-bands", "time-to-sell", "market-flow")


# Documents bigger than this are parsed in a worker thread (a few ms of the event loop).
INLINE_PARSE_BYTES = 256 * 1024


def summary(analysis: AnalysisRecord, title: str) -> AnalysisSummary:
    """The list entry of `analysis`; `title` from `naming` (what it is of, never an id)."""
    return AnalysisSummary.model_validate({**record_fields(analysis), "title": title})


async def summaries(
    store: Store, workspace_id: str, offset: int, limit: int
) -> tuple[list[AnalysisSummary], int]:
    """A page of the workspace's analyses, newest first, titled (the REST list and the MCP
    tool answer the same), and how many analyses there are."""
    analyses, total = await store.runs.analyses(workspace_id, offset, limit)
    titles = await analysis_titles(store, workspace_id, analyses)
    return [summary(a, titles[a.id]) for a in analyses], total


def graph_links(analysis_id: str) -> dict[str, dict[str, str]]:
    base = f"/api/analyses/{analysis_id}/graphs"
    return {
        name: {"vega_lite": f"{base}/{name}.json", "svg": f"{base}/{name}.svg"}
        for name in GRAPH_NAMES
    }


async def analysis_in_workspace(
    store: Store, analysis_id: str, workspace_id: str
) -> AnalysisRecord:
    """The analysis; `NotFound` when it does not exist or belongs to another workspace."""
    return found(await store.runs.analysis(analysis_id, workspace_id), "analysis")


def analysis_out(analysis: AnalysisRecord, title: str) -> AnalysisOut:
    # The graph specs are served on their own routes; the body links to them.
    result = {k: v for k, v in _stored_document(analysis).items() if k != "graphs"}
    return AnalysisOut(
        **summary(analysis, title).model_dump(), result=result, graphs=graph_links(analysis.id)
    )


def _stored_document(analysis: AnalysisRecord) -> dict[str, Any]:
    """The stored result, with its sales basis (derived for one stored before it existed,
    as `cache.AnalysisParts` serves it)."""
    return with_sales_basis(json.loads(analysis.result_json))


@dataclass(frozen=True, slots=True)
class AnalysisRead:
    analysis: AnalysisRecord  # its `result_json` is not read when the cache had it
    title: str
    parts: AnalysisParts


async def read_analysis(
    store: Store, cache: AnalysisCache, analysis_id: str, workspace_id: str
) -> AnalysisRead:
    """The workspace's analysis with its document's parts (parsed once per process into
    `cache`, see `cache.py`); `NotFound` when it does not exist or belongs to another
    workspace."""
    parts = cache.get(analysis_id)
    origin = await store.runs.analysis_origin(analysis_id, workspace_id, with_result=parts is None)
    if origin is None:
        cache.forget(analysis_id)
        raise NotFound("analysis")
    if parts is None:
        parts = await parse_parts(cache, origin.analysis.id, origin.analysis.result_json)
    title = analysis_title(origin.analysis, origin.run, origin.monitor)
    return AnalysisRead(origin.analysis, title, parts)


async def parse_parts(cache: AnalysisCache, analysis_id: str, result_json: str) -> AnalysisParts:
    """Parse a stored document into `cache` (a big one in a worker thread: it would hold
    the event loop for tens of milliseconds)."""
    if len(result_json) > INLINE_PARSE_BYTES:
        parts = await trio.to_thread.run_sync(AnalysisParts.parse, result_json, DASHBOARD_NICHES)
    else:
        parts = AnalysisParts.parse(result_json, DASHBOARD_NICHES)
    cache.put(analysis_id, parts)
    return parts
