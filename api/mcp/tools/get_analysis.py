"""`get_analysis`: one analysis with a page of its ranked niches and alerts (what
`GET /api/analyses/{id}` answers, cut to fit an agent's context window: `_analysis_page`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from api.analyses.actions import analysis_in_workspace, analysis_out
from api.http.auth import Principal
from api.mcp._registry import MAX_ANSWER_BYTES, READ_ONLY, Tool
from api.mcp.tools._analysis_page import (
    ALWAYS,
    HEAVY,
    NICHE_FIELDS,
    AnalysisPage,
    Window,
    chosen_fields,
    page_of,
)
from api.naming import title_of_analysis
from api.services import services

DEFAULT_LIMIT = 25
MAX_LIMIT = 500
DEFAULT_ALERTS = 10
MAX_ALERTS = 200
# Checked by the handler, so that a wrong name is an error result listing the valid ones.
NicheField = Annotated[
    str, Field(max_length=40), WithJsonSchema({"type": "string", "enum": list(NICHE_FIELDS)})
]


class GetAnalysisArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", title="GetAnalysisArguments")

    analysis_id: str = Field(
        min_length=1,
        max_length=64,
        description="An analysis id (`an_...`) from list_analyses or a run's `analysis_id`.",
    )
    offset: int = Field(
        default=0, ge=0, le=10_000, description="Niches to skip (best first); default 0."
    )
    limit: int = Field(
        default=DEFAULT_LIMIT,
        ge=1,
        le=MAX_LIMIT,
        description=f"Niches to answer at most (1-{MAX_LIMIT}, default {DEFAULT_LIMIT}); fewer "
        f"when they would not fit in {MAX_ANSWER_BYTES // 1024} KB.",
    )
    fields: list[NicheField] | None = Field(
        default=None,
        max_length=len(NICHE_FIELDS),
        description=f"The niche fields to answer ({', '.join(ALWAYS)} always are). Omitted: "
        f"every field but {' and '.join(HEAVY)} (the survival curve and the score's "
        "workings), which are answered when named. An unknown name is an error result "
        "listing the valid ones.",
    )
    alerts_offset: int = Field(default=0, ge=0, le=10_000, description="Alerts to skip.")
    alerts_limit: int = Field(
        default=DEFAULT_ALERTS,
        ge=0,
        le=MAX_ALERTS,
        description=f"Alerts to answer at most (0-{MAX_ALERTS}, default {DEFAULT_ALERTS}).",
    )


async def get_analysis(principal: Principal, arguments: GetAnalysisArguments) -> AnalysisPage:
    fields = chosen_fields(arguments.fields)
    # Another workspace's analysis is `not_found`, exactly like one that does not exist.
    store = services().store
    analysis = await analysis_in_workspace(store, arguments.analysis_id, principal.workspace_id)
    full = analysis_out(analysis, await title_of_analysis(store, analysis))
    window = Window(
        arguments.offset, arguments.limit, arguments.alerts_offset, arguments.alerts_limit
    )
    return page_of(full, fields, window)


TOOL = Tool(
    name="get_analysis",
    title="Get an analysis",
    description=(
        "One analysis: its ranked niches (best first) with their evidence, alerts and notes, "
        "plus links to its four graphs (REST paths, same token). Paged to fit a context "
        f"window: `limit` niches (default {DEFAULT_LIMIT}) from `offset`, `alerts_limit` "
        f"alerts (default {DEFAULT_ALERTS}) from `alerts_offset`, each niche with `fields` "
        "(default: all but km_curve and score_parts, which are answered when named). "
        "`niches_total` and `alerts_total` count them all; when some were left out, "
        "`truncated` is true and `next_arguments` are the arguments of the call that answers "
        "what follows. `result.sales_basis` says which sales it counts (`confirmed`, `likely` "
        "or `confirmed_and_likely`) and `result.sales_basis_note` says so in a sentence: when "
        "likely sales count (inferred from absence from the feed, which cannot tell a sale "
        "from a withdrawal), pass that sentence on with the figures. An unknown id, or one of "
        "another workspace, is an error result with code `not_found`; an unknown field, "
        "`unknown_field`."
    ),
    scope="read",
    input_model=GetAnalysisArguments,
    output_model=AnalysisPage,
    annotations=READ_ONLY,
    handler=get_analysis,
    smaller="Pass a smaller `limit` or `alerts_limit`, or fewer `fields`.",
)
