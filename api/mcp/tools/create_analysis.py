"""`create_analysis`: queue an analysis run (what `POST /api/runs` does, same validation)."""

from __future__ import annotations

from api.http.auth import Principal
from api.mcp._registry import Tool
from api.mcp.tools.create_monitor import CREATES_AND_SCRAPES
from api.runs.actions import create_run_in, run_out
from api.runs.schemas import CreateRunRequest, RunOut
from api.services import services


class CreatedRun(RunOut):
    """The new run (`queued` or `running`) and how to follow it."""

    next_steps: str


async def create_analysis(principal: Principal, arguments: CreateRunRequest) -> CreatedRun:
    # The REST view's own function: URL checks, monitor ownership and quotas are identical.
    backend = services().backend
    run = run_out(await create_run_in(backend, principal.workspace_id, arguments))
    return CreatedRun(
        **run.model_dump(),
        next_steps=(
            f"Run {run.id} is {run.state}. Poll it with list_runs (newest first) or "
            f"GET /api/runs/{run.id} with this token until its state is succeeded, failed "
            "or cancelled; once succeeded, call get_analysis with its analysis_id."
        ),
    )


TOOL = Tool(
    name="create_analysis",
    title="Create an analysis",
    description=(
        "Queue an analysis run of a marketplace catalogue URL (`url`: a one-off scrape of up to "
        "`max_items` listings) or of a monitor's captured history (`monitor_id`): give exactly "
        "one, plus an optional `label`, and for a monitor `include_likely_sales` (omit it to "
        "let the evidence choose: likely sales only when no sale was confirmed). Returns the "
        "run at once (state queued or running) with `next_steps` telling how to poll it; when "
        "it has succeeded its `analysis_id` is read with get_analysis. Each call starts a new "
        "run."
    ),
    scope="write",
    input_model=CreateRunRequest,
    output_model=CreatedRun,
    annotations=CREATES_AND_SCRAPES,
    handler=create_analysis,
)
