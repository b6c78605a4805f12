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

from ._monitor_models import Monitor
from ._monitor_records import MonitorRecord
from ._monitors import monitor_record
from ._run_models import Analysis, Run
from ._run_records import AnalysisRecord, RunRecord
from ._runs import newest_runs, run_record


@dataclass(frozen=True, slots=True)
class AnalysisOrigin:
    """An analysis (its `result_json` empty unless asked for) with its run and that run's
    monitor as they are now (None when gone, or never: an import has no run)."""

    analysis: AnalysisRecord
    run: RunRecord | None
    monitor: MonitorRecord | None


@dataclass(frozen=True, slots=True)
class DashboardView:
    origin: AnalysisOrigin | None
    recent_runs: list[RunRecord]


_COLUMNS = (
    Analysis.id,
    Analysis.workspace_id,
    Analysis.run_id,
    Analysis.source,
    Analysis.source_url,
    Analysis.created_at,
)


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
    run, monitor = row[-2], row[-1]
    analysis = AnalysisRecord(
        id=str(analysis_id),
        workspace_id=str(workspace_id),
        run_id=None if run_id is None else str(run_id),
        source=source,
        source_url=None if source_url is None else str(source_url),
        created_at=created_at,
        result_json=result_json,
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
    return _origin(row, str(row[6]) if with_result else "")


def analysis_result(db: Session, analysis_id: str, workspace_id: str) -> str | None:
    """Only the document of the analysis (None if it is not in the workspace)."""
    found = db.scalar(
        select(Analysis.result).where(
            Analysis.id == analysis_id, Analysis.workspace_id == workspace_id
        )
    )
    return None if found is None else str(found)


def dashboard_view(
    db: Session, workspace_id: str, *, analysis_id: str | None, newest: bool, recent_runs: int
) -> DashboardView:
    """The analysis the dashboard shows (`analysis_id`, or with `newest` the workspace's
    newest, or none; its document not read) and the `recent_runs` newest runs."""
    query = _with_origin(*_COLUMNS).where(Analysis.workspace_id == workspace_id)
    if analysis_id is not None:
        query = query.where(Analysis.id == analysis_id)
    else:
        query = query.order_by(Analysis.created_at.desc(), Analysis.id.desc()).limit(1)
    row = db.execute(query).first() if analysis_id is not None or newest else None
    origin = None if row is None else _origin(row, "")
    runs = newest_runs(db, workspace_id, recent_runs) if recent_runs else []
    return DashboardView(origin, runs)
