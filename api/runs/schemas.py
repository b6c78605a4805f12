"""Bodies of the run endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from api.http.schemas import OneSource

# The most listings any request may name; the plan's `items_per_run` is the real bound.
MAX_ITEMS_LIMIT = 20_000
MAX_ITEMS_DOC = (
    "A catalogue URL's run: read at most this many listings of the catalogue. Omitted or "
    "null: as many as the plan's `items_per_run` allows (200 on the trial); more than it "
    "allows is a 403 `quota_exceeded` naming the next plan up that allows it. Items per run "
    "bound what one scrape reads from the marketplace; a monitor's history is bounded by the "
    "plan's monitor quota instead and is analysed whole, so `max_items` is ignored with "
    "`monitor_id` and a monitor's run is never refused for its size."
)


LIKELY_SALES_DOC = (
    "A monitor's history: which sales count. `true`: likely sales too (listings gone from "
    "the feed for several checks that no source confirmed sold); `false`: confirmed sales "
    "only, a likely sale counting as an unsold listing, even when that leaves no sale. "
    "Omitted or null: chosen from the evidence, confirmed sales only unless the analysed "
    "window holds likely sales and not one confirmed sale (the marketplace refused every "
    "confirming source), then likely sales. Absence cannot tell a sale from a withdrawal. "
    "The analysis says which it used in `result.sales_basis`, why in `sales_basis_reason`, "
    "and in a sentence in `sales_basis_note`."
)


class CreateRunRequest(OneSource):
    sources = ("url", "monitor_id")

    url: str | None = Field(default=None, min_length=1, max_length=2048)
    monitor_id: str | None = Field(default=None, min_length=1, max_length=64)
    label: str | None = Field(default=None, max_length=200)
    max_items: int | None = Field(default=None, ge=1, le=MAX_ITEMS_LIMIT, description=MAX_ITEMS_DOC)
    include_likely_sales: bool | None = Field(default=None, description=LIKELY_SALES_DOC)


class LogQuery(BaseModel):
    tail_lines: int = Field(default=160, ge=1, le=5000)


class AlertsQuery(BaseModel):
    format: Literal["csv", "json"] = "csv"


class RunOut(BaseModel):
    id: str
    label: str | None
    source: Literal["url", "monitor"]
    url: str | None
    monitor_id: str | None
    max_items: int | None = Field(
        description="A catalogue URL's run: the most listings it reads (the plan's "
        "`items_per_run` unless the request asked for fewer). Null for a monitor's run: the "
        "monitor's whole history is analysed."
    )
    state: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    replay_of: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    progress: float
    items: int
    error: str | None
    analysis_id: str | None
    include_likely_sales: bool | None = Field(
        default=None,
        description="What the run asked for (see the request's `include_likely_sales`); null: "
        "the analysis chose from the evidence. A replay asks the same.",
    )


class RunList(BaseModel):
    runs: list[RunOut]
    page: int
    page_size: int
    total: int
