"""`list_analyses`: the workspace's analyses, newest first (what `GET /api/analyses` lists)."""

from __future__ import annotations

from pydantic import BaseModel

from api.analyses.actions import summaries
from api.analyses.schemas import AnalysisSummary
from api.http.auth import Principal
from api.mcp._registry import READ_ONLY, Tool
from api.mcp.tools._paging import NEXT_CURSOR, PAGING_DOC, PageArguments, fitting
from api.services import services


class ListAnalysesArguments(PageArguments):
    kind = "analyses"


class AnalysisPage(BaseModel):
    analyses: list[AnalysisSummary]
    total: int
    nextCursor: str | None = NEXT_CURSOR


async def list_analyses(principal: Principal, arguments: ListAnalysesArguments) -> AnalysisPage:
    analyses, total = await summaries(
        services().store, principal.workspace_id, arguments.offset, arguments.limit
    )
    shown = fitting(analyses)
    return AnalysisPage(analyses=shown, **arguments.fields(total, len(shown)))


TOOL = Tool(
    name="list_analyses",
    title="List analyses",
    description=(
        "The workspace's analyses (results of succeeded runs and imported monitor exports), "
        "newest first: id, `title` (what it is of: the run's name, its monitor's name or URL, "
        "or the catalogue URL), source, source URL, date. Read one with get_analysis. " + PAGING_DOC
    ),
    scope="read",
    input_model=ListAnalysesArguments,
    output_model=AnalysisPage,
    annotations=READ_ONLY,
    handler=list_analyses,
)
