"""`get_analysis`: one analysis with its ranked niches (what `GET /api/analyses/{id}` answers)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from api.analyses.actions import analysis_in_workspace, analysis_out
from api.analyses.schemas import AnalysisOut
from api.http.auth import Principal
from api.mcp._registry import READ_ONLY, Tool
from api.naming import title_of_analysis


class GetAnalysisArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", title="GetAnalysisArguments")

    analysis_id: str = Field(
        min_length=1,
        max_length=64,
        description="An analysis id (`an_...`) from list_analyses or a run's `analysis_id`.",
    )


async def get_analysis(principal: Principal, arguments: GetAnalysisArguments) -> AnalysisOut:
    # Another workspace's analysis is `not_found`, exactly like one that does not exist.
    analysis = await analysis_in_workspace(arguments.analysis_id, principal.workspace_id)
    return analysis_out(analysis, await title_of_analysis(analysis))


TOOL = Tool(
    name="get_analysis",
    title="Get an analysis",
    description=(
        "One analysis: ranked niches with their evidence, alerts and notes, plus links to its "
        "four graphs (REST paths, same token). `result.sales_basis` says which sales it "
        "counts (`confirmed`, `likely` or `confirmed_and_likely`) and `result.sales_basis_note` "
        "says so in a sentence: when likely sales count (inferred from absence from the feed, "
        "which cannot tell a sale from a withdrawal), pass that sentence on with the figures. "
        "An unknown id, or one of another workspace, is an error result with code `not_found`."
    ),
    scope="read",
    input_model=GetAnalysisArguments,
    output_model=AnalysisOut,
    annotations=READ_ONLY,
    handler=get_analysis,
)
