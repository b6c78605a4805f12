"""Bodies of the analysis, import and dashboard endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field


class ImportQuery(BaseModel):
    include_likely_sales: bool = Field(
        default=False,
        description="Rank niches on likely sales too (sold by absence from the feed); by "
        "default only confirmed sales count.",
    )


class DashboardQuery(BaseModel):
    run_id: str | None = None
    include_top_niches: bool = True
    include_recent_runs: bool = True


class AnalysisSummary(BaseModel):
    id: str
    title: str = Field(
        description="What the analysis is of, for people: the run's name if it was given "
        "one, else its monitor's name or URL, else the catalogue URL it read; never an id."
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


class AnalysisOut(AnalysisSummary):
    result: dict[str, Any]
    graphs: dict[str, dict[str, str]]
