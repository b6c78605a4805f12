"""Bodies of the run, analysis and dashboard endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .schemas import MAX_PAGE, Strict, exactly_one_of

DEFAULT_MAX_ITEMS = 960
MAX_ITEMS_LIMIT = 20_000


class CreateRunRequest(Strict):
    model_config = ConfigDict(extra="forbid", json_schema_extra=exactly_one_of("url", "monitor_id"))

    url: str | None = Field(default=None, min_length=1, max_length=2048)
    monitor_id: str | None = Field(default=None, min_length=1, max_length=64)
    label: str | None = Field(default=None, max_length=200)
    max_items: int = Field(default=DEFAULT_MAX_ITEMS, ge=1, le=MAX_ITEMS_LIMIT)
    include_likely_sales: bool = Field(
        default=False,
        description="A monitor's history: rank niches on likely sales too (listings gone "
        "from the feed for several checks that no source confirmed sold). By default only "
        "confirmed sales count, and a likely sale counts as an unsold listing.",
    )

    @model_validator(mode="after")
    def _exactly_one_source(self) -> CreateRunRequest:
        if (self.url is None) == (self.monitor_id is None):
            raise ValueError("give exactly one of url or monitor_id")
        return self


class PageQuery(BaseModel):
    page: int = Field(default=1, ge=1, le=MAX_PAGE)
    page_size: int = Field(default=20, ge=1, le=100)


class LogQuery(BaseModel):
    tail_lines: int = Field(default=160, ge=1, le=5000)


class AlertsQuery(BaseModel):
    format: Literal["csv", "json"] = "csv"


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


class RunOut(BaseModel):
    id: str
    label: str | None
    source: Literal["url", "monitor"]
    url: str | None
    monitor_id: str | None
    max_items: int
    state: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    replay_of: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    progress: float
    items: int
    error: str | None
    analysis_id: str | None
    include_likely_sales: bool = False


class RunList(BaseModel):
    runs: list[RunOut]
    page: int
    page_size: int
    total: int


class DeletedOut(BaseModel):
    id: str
    deleted: bool


class AnalysisSummary(BaseModel):
    id: str
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
