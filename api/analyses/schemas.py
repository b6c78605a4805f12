"""Bodies of the analysis, import and dashboard endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from api.http.schemas import Strict


class ImportQuery(BaseModel):
    include_likely_sales: bool | None = Field(
        default=None,
        description="Which sales count: `true` likely sales too (sold by absence from the "
        "feed), `false` confirmed sales only (even when that leaves none). Omitted: chosen "
        "from the export, confirmed sales only unless its window holds likely sales and not "
        "one confirmed sale (the marketplace refused every confirming source). The analysis "
        "says which it used in `result.sales_basis`.",
    )


class DashboardQuery(BaseModel):
    run_id: str | None = None
    include_top_niches: bool = True
    include_recent_runs: bool = True


class PinRequest(Strict):
    analysis_id: str = Field(
        min_length=1, max_length=64, description="The analysis to show on the dashboard."
    )


class DashboardPin(BaseModel):
    analysis_id: str | None = Field(
        description="The analysis pinned to the dashboard; null when none is."
    )


class AnalysisSummary(BaseModel):
    id: str
    title: str = Field(
        description="What the analysis is of, for people: the run's name if it was given "
        "one, else its monitor's label (an import: the exported monitor's label), else what "
        "its catalogue URL asks for in words (`Catalogue of vinted.fr: 2 categories`); "
        "never an id or a raw URL."
    )
    run_id: str | None
    source: Literal["scrape", "monitor", "import"]
    source_url: str | None
    created_at: datetime


class AnalysisList(BaseModel):
    analyses: list[AnalysisSummary]
    page: int
    page_size: int
    total: int


RESULT_DOC = (
    "The analysis: `niches` best first, `alerts`, `flow`, `counts` (with `sold_confirmed` and "
    "`sold_likely`), `notes`, `coverage` and `window`, and which sales it counts: "
    "`sales_basis` (`confirmed`: sales a source, the item page or the detail API, saw; "
    "`likely`: sales inferred from absence from the feed, used by default when the window "
    "had likely sales and not one confirmed sale, i.e. the marketplace refused every "
    "confirming source; `confirmed_and_likely`: both, as asked), `sales_basis_reason` "
    "(`requested`, `confirmed_sales_seen`, `no_likely_sales`, `no_confirmed_sales`, or "
    "`stored_before_auto` for an analysis made when confirmed-only was the default), "
    "`sales_basis_note` (the same in a sentence for people: show it where likely sales "
    "count, since absence cannot tell a sale from a withdrawal), "
    "`include_likely_sales_requested` (what was asked; null: chosen) and "
    "`include_likely_sales` (whether likely sales counted)."
)


class AnalysisOut(AnalysisSummary):
    result: dict[str, Any] = Field(description=RESULT_DOC)
    graphs: dict[str, dict[str, str]]
