"""Records of runs and analyses."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

RunState = Literal["queued", "running", "succeeded", "failed", "cancelled"]
FINISHED_RUN_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
RunSource = Literal["url", "monitor"]
AnalysisSource = Literal["scrape", "monitor", "import"]


@dataclass(frozen=True, slots=True)
class NewRun:
    """What creating a run takes (`store.runs.create`): the run starts `queued`."""

    run_id: str
    workspace_id: str
    label: str | None
    source: RunSource
    url: str | None
    monitor_id: str | None
    max_items: int
    replay_of: str | None = None  # the run this one repeats
    # Rank on likely sales too (monitor runs); None: the analysis chooses from the evidence.
    include_likely_sales: bool | None = None


@dataclass(frozen=True, slots=True)
class NewAnalysis:
    """What storing an analysis takes (`store.runs.add_analysis`)."""

    analysis_id: str
    workspace_id: str
    run_id: str | None  # None for an import
    source: AnalysisSource
    source_url: str | None
    result_json: str
    source_label: str | None = None  # an import's: the exported monitor's label
    # What the analysis rests on (`engine.analysis.evidence_depth`): days of history, sales.
    window_days: float | None = None
    sales: int | None = None


@dataclass(frozen=True, slots=True)
class RunRecord:
    id: str
    workspace_id: str
    label: str | None
    source: RunSource
    url: str | None
    monitor_id: str | None
    max_items: int
    state: RunState
    replay_of: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    progress: float
    items: int
    error: str | None
    analysis_id: str | None
    include_likely_sales: bool | None = None  # as `NewRun`'s


@dataclass(frozen=True, slots=True)
class AnalysisRecord:
    id: str
    workspace_id: str
    run_id: str | None
    source: AnalysisSource
    source_url: str | None
    created_at: datetime
    result_json: str
    source_label: str | None = None  # as `NewAnalysis`'s
    window_days: float | None = None
    sales: int | None = None
