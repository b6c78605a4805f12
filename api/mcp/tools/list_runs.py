"""`list_runs`: the workspace's analysis runs, newest first (what `GET /api/runs` lists)."""

from __future__ import annotations

from pydantic import BaseModel

from api.http.auth import Principal
from api.mcp._registry import READ_ONLY, Tool
from api.mcp.tools._paging import NEXT_CURSOR, PAGING_DOC, PageArguments, fitting
from api.runs.actions import runs_out
from api.runs.schemas import RunOut
from api.services import services


class ListRunsArguments(PageArguments):
    kind = "runs"


class RunPage(BaseModel):
    runs: list[RunOut]
    total: int
    nextCursor: str | None = NEXT_CURSOR


async def list_runs(principal: Principal, arguments: ListRunsArguments) -> RunPage:
    runs, total = await runs_out(
        services().store, principal.workspace_id, arguments.offset, arguments.limit
    )
    shown = fitting(runs)
    return RunPage(runs=shown, **arguments.fields(total, len(shown)))


TOOL = Tool(
    name="list_runs",
    title="List analysis runs",
    description=(
        "The workspace's analysis runs, newest first: state (queued, running, succeeded, "
        "failed, cancelled), progress, items scraped, error, and `analysis_id` once succeeded "
        "(read it with get_analysis). " + PAGING_DOC
    ),
    scope="read",
    input_model=ListRunsArguments,
    output_model=RunPage,
    annotations=READ_ONLY,
    handler=list_runs,
)
