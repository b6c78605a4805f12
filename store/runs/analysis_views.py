"""What a page or answer about one analysis reads, in one unit of work.

An analysis never changes once stored, so its document (`result_json`, often hundreds of
kilobytes) is read only when the caller has no copy of it (`with_result`); the rest, which
says whether the analysis still exists in the workspace and what its run and monitor are
called now, is small and read every time, so a cached copy is never served after a delete.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from ..monitors.models import Monitor
from ..monitors.queries import monitor_record
from ..monitors.records import MonitorRecord
from .models import Analysis, DashboardPin, Run
from .queries import newest_runs, run_record
from .records import AnalysisRecord, RunRecord


@dataclass(frozen=True, slots=True)
class AnalysisOrigin:
    """An analysis (its `result_json` empty unless asked for) with its run and that run's
    monitor as they are now (None when gone, or never: an import has no run)."""

    analysis: AnalysisRecord
    run: RunRecord | None
    monitor: MonitorRecord | None


@dataclass(frozen=True, slots=True)
class DashboardView:
    """What the dashboard may show: the analysis asked for (`origin`), or the candidates its
    choice is made from (the pinned one, the newest above the floor, the newest), and the
    recent runs. The choice itself is the caller's (`api/analyses/choice.py`)."""

    origin: AnalysisOrigin | None
    recent_runs: list[RunRecord]
    pinned: AnalysisOrigin | None = None
    trusted: AnalysisOrigin | None = None  # the newest with enough evidence (`floor`)
    latest: AnalysisOrigin | None = None


@dataclass(frozen=True, slots=True)
class DepthFloor:
    """The least evidence an analysis needs to be a `trusted` candidate (its stored
    `window_days` and `sales`); the rule and its figures are the caller's."""

    min_days: float
    min_sales: int


_COLUMNS = (
    Analysis.id,
    Analysis.workspace_id,
    Analysis.run_id,
    Analysis.source,
    Analysis.source_url,
    Analysis.created_at,
    Analysis.source_label,
    Analysis.window_days,
    Analysis.sales,
)
_RESULT_AT = len(_COLUMNS)  # where the document is, when it is read


def _with_origin(*columns: Any) -> Select[Any]:
    """The analysis' columns with its run and that run's monitor, in the analysis' workspace,
    in one statement (outer joins: an import has no run, a URL run no monitor)."""
    return (
        select(*columns, Run, Monitor)
        .select_from(Analysis)
        .outerjoin(Run, (Run.id == Analysis.run_id) & (Run.workspace_id == Analysis.workspace_id))
        .outerjoin(
            Monitor,
            (Monitor.id == Run.monitor_id) & (Monitor.workspace_id == Analysis.workspace_id),
        )
    )


def _origin(row: Any, result_json: str) -> AnalysisOrigin:
    analysis_id, workspace_id, run_id, source, source_url, created_at = row[:6]
    source_label, window_days, sales = row[6:_RESULT_AT]
    run, monitor = row[-2], row[-1]
    analysis = AnalysisRecord(
        id=str(analysis_id),
        workspace_id=str(workspace_id),
        run_id=None if run_id is None else str(run_id),
        source=source,
        source_url=None if source_url is None else str(source_url),
        created_at=created_at,
        result_json=result_json,
        source_label=source_label,
        window_days=window_days,
        sales=sales,
    )
    return AnalysisOrigin(
        analysis,
        None if run is None else run_record(run),
        None if monitor is None else monitor_record(monitor),
    )


def analysis_origin(
    db: Session, analysis_id: str, workspace_id: str, *, with_result: bool
) -> AnalysisOrigin | None:
    """The analysis in `workspace_id` with its origin; None if it is not there."""
    columns = (*_COLUMNS, Analysis.result) if with_result else _COLUMNS
    row = db.execute(
        _with_origin(*columns).where(
            Analysis.id == analysis_id, Analysis.workspace_id == workspace_id
        )
    ).first()
    if row is None:
        return None
    return _origin(row, str(row[_RESULT_AT]) if with_result else "")


def analysis_result(db: Session, analysis_id: str, workspace_id: str) -> str | None:
    """Only the document of the analysis (None if it is not in the workspace)."""
    found = db.scalar(
        select(Analysis.result).where(
            Analysis.id == analysis_id, Analysis.workspace_id == workspace_id
        )
    )
    return None if found is None else str(found)


def dashboard_view(
    db: Session,
    workspace_id: str,
    *,
    analysis_id: str | None,
    floor: DepthFloor | None,
    recent_runs: int,
) -> DashboardView:
    """The analysis `analysis_id` (None: none asked), or with a `floor` the candidates the
    dashboard chooses from, none of their documents read; and the `recent_runs` newest runs."""
    mine = _with_origin(*_COLUMNS).where(Analysis.workspace_id == workspace_id)
    newest = mine.order_by(Analysis.created_at.desc(), Analysis.id.desc()).limit(1)
    origin = _first(db, mine.where(Analysis.id == analysis_id)) if analysis_id else None
    pinned = trusted = latest = None
    if floor is not None:
        pinned = _first(
            db,
            mine.join(DashboardPin, DashboardPin.analysis_id == Analysis.id).where(
                DashboardPin.workspace_id == workspace_id
            ),
        )
        latest = _first(db, newest)
        deep = (Analysis.window_days >= floor.min_days) & (Analysis.sales >= floor.min_sales)
        if latest is not None and _clears(latest.analysis, floor):
            trusted = latest
        elif latest is not None:
            trusted = _first(db, newest.where(deep))
    runs = newest_runs(db, workspace_id, recent_runs) if recent_runs else []
    return DashboardView(origin, runs, pinned=pinned, trusted=trusted, latest=latest)


def _first(db: Session, query: Select[Any]) -> AnalysisOrigin | None:
    row = db.execute(query).first()
    return None if row is None else _origin(row, "")


def _clears(analysis: AnalysisRecord, floor: DepthFloor) -> bool:
    days, sales = analysis.window_days, analysis.sales
    return (
        days is not None
        and sales is not None
        and days >= floor.min_days
        and (sales >= floor.min_sales)
    )
