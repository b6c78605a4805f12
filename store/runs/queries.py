"""Run and analysis repository; every function a request can reach is workspace-scoped."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Integer, delete, func, select, update
from sqlalchemy.orm import Session

from .._db.driver_reads import DriverRead, Reader, record_columns
from .._db.rows import field_names, new_row, record_fields, to_record, workspace_row
from ..accounts.quotas import hold_workspace, refuse_past
from .models import Analysis, Run, RunLogLine
from .records import (
    FINISHED_RUN_STATES,
    AnalysisRecord,
    NewAnalysis,
    NewRun,
    RunRecord,
    RunState,
)


def run_record(row: Run) -> RunRecord:
    return to_record(RunRecord, row)


def analysis_record(row: Analysis) -> AnalysisRecord:
    return to_record(AnalysisRecord, row, result_json=row.result)


def admit_run(db: Session, workspace_id: str, at_most: int, now: datetime) -> None:
    """`QuotaFull` (`runs_per_day`) when the workspace has created `at_most` runs and imports
    since 00:00 UTC of `now`, counted under its quota lock (`store/accounts/quotas.py`): call
    it first in the unit that writes the run or the import."""
    hold_workspace(db, workspace_id)
    midnight = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    refuse_past("runs_per_day", at_most, count_runs_since(db, workspace_id, midnight))


def create_run(db: Session, new: NewRun, now: datetime) -> RunRecord:
    run = new_row(Run, new, "run_id", state="queued", progress=0.0, items=0, created_at=now)
    db.add(run)
    db.flush()
    return run_record(run)


def get_run(db: Reader, run_id: str, workspace_id: str | None) -> RunRecord | None:
    """The run; with `workspace_id`, only if it is that workspace's (a run's page asks for
    it every few seconds while it runs: SQL compiled once, `DriverRead`)."""
    if workspace_id is None:
        return _RUN.first(db, {"run": run_id})
    return _RUN_IN_WORKSPACE.first(db, {"run": run_id, "workspace": workspace_id})


def _newest_first(
    db: Session, model: type[Run], workspace_id: str, offset: int, limit: int
) -> tuple[list[Run], int]:
    """One page of a workspace's rows of `model`, newest first, and the total count."""
    total = int(
        db.scalar(select(func.count()).select_from(model).where(model.workspace_id == workspace_id))
        or 0
    )
    rows = db.scalars(
        select(model)
        .where(model.workspace_id == workspace_id)
        .order_by(model.created_at.desc(), model.id.desc())
        .offset(offset)
        .limit(limit)
    )
    return list(rows), total


def newest_runs(db: Reader, workspace_id: str, limit: int) -> list[RunRecord]:
    """The workspace's `limit` newest runs (no total: the dashboard shows a few, on every
    request: SQL compiled once, `DriverRead`)."""
    return _NEWEST_RUNS.all(db, {"workspace": workspace_id, "limit": limit})


_RUN_COLUMNS, _RUN_TYPES = record_columns(Run, field_names(RunRecord), "r")
_RUNS = f"SELECT {', '.join(_RUN_COLUMNS)} FROM {Run.__tablename__} r"
_RUN = DriverRead(f"{_RUNS} WHERE r.id = :run", _RUN_TYPES, RunRecord)
_RUN_IN_WORKSPACE = DriverRead(
    f"{_RUNS} WHERE r.id = :run AND r.workspace_id = :workspace", _RUN_TYPES, RunRecord
)
_NEWEST_RUNS = DriverRead(
    f"{_RUNS} WHERE r.workspace_id = :workspace ORDER BY r.created_at DESC, r.id DESC LIMIT :limit",
    _RUN_TYPES,
    RunRecord,
)


def list_runs(
    db: Session, workspace_id: str, offset: int, limit: int
) -> tuple[list[RunRecord], int]:
    rows, total = _newest_first(db, Run, workspace_id, offset, limit)
    return [run_record(r) for r in rows], total


def count_runs_since(db: Session, workspace_id: str, since: datetime) -> int:
    """Runs created since `since`, and imports (analyses with no run), which count as runs
    against a plan's daily runs."""
    runs = db.scalar(
        select(func.count())
        .select_from(Run)
        .where(Run.workspace_id == workspace_id, Run.created_at >= since)
    )
    imports = db.scalar(
        select(func.count())
        .select_from(Analysis)
        .where(
            Analysis.workspace_id == workspace_id,
            Analysis.source == "import",
            Analysis.created_at >= since,
        )
    )
    return int(runs or 0) + int(imports or 0)


def update_run(db: Session, run_id: str, **values: Any) -> None:
    db.execute(update(Run).where(Run.id == run_id).values(**values))


def finish_run(db: Session, run_id: str, state: RunState, *, at: datetime, **values: Any) -> bool:
    """Move a run to a final state unless it already is in one (first writer wins)."""
    result = db.execute(
        update(Run)
        .where(Run.id == run_id, Run.state.not_in(tuple(FINISHED_RUN_STATES)))
        .values(state=state, finished_at=at, **values)
    )
    return (result.rowcount or 0) == 1  # type: ignore[attr-defined]


def unfinished_runs(db: Session) -> list[RunRecord]:
    rows = db.scalars(select(Run).where(Run.state.in_(("queued", "running"))))
    return [run_record(r) for r in rows]


def add_log_line(db: Session, run_id: str, at: datetime, line: str) -> None:
    db.add(RunLogLine(run_id=run_id, at=at, line=line))


def log_tail(db: Session, run_id: str, lines: int) -> list[tuple[datetime, str]]:
    rows = db.execute(
        select(RunLogLine.at, RunLogLine.line)
        .where(RunLogLine.run_id == run_id)
        .order_by(RunLogLine.id.desc())
        .limit(lines)
    )
    return [(at, line) for at, line in reversed(list(rows))]


def delete_run(db: Session, run_id: str, workspace_id: str) -> bool:
    run = db.scalar(select(Run).where(Run.id == run_id, Run.workspace_id == workspace_id))
    if run is None:
        return False
    db.execute(delete(RunLogLine).where(RunLogLine.run_id == run_id))
    db.execute(delete(Analysis).where(Analysis.run_id == run_id))
    db.execute(delete(Run).where(Run.id == run_id))
    return True


def add_analysis(db: Session, new: NewAnalysis, now: datetime) -> AnalysisRecord:
    fields = record_fields(new)
    analysis = Analysis(
        id=fields.pop("analysis_id"), result=fields.pop("result_json"), created_at=now, **fields
    )
    db.add(analysis)
    db.flush()
    return analysis_record(analysis)


def get_analysis(db: Session, analysis_id: str, workspace_id: str | None) -> AnalysisRecord | None:
    analysis = workspace_row(db, Analysis, analysis_id, workspace_id)
    return None if analysis is None else analysis_record(analysis)


def list_analyses(
    db: Reader, workspace_id: str, offset: int, limit: int
) -> tuple[list[AnalysisRecord], int]:
    """A page of the workspace's analyses, newest first, without their documents
    (`result_json` empty), and how many there are. A list names and dates analyses; their
    documents, hundreds of kilobytes each, were read for nothing: 50 of them cost a list
    30-50 ms."""
    params = {"workspace": workspace_id, "limit": limit, "offset": offset}
    total = _ANALYSES_COUNT.first(db, {"workspace": workspace_id})
    return _ANALYSES_PAGE.all(db, params), int(total or 0)


# An analysis' columns but its document, in `AnalysisRecord`'s order: what lists and an
# analysis' origin (`analysis_views.py`) read on every request.
ANALYSIS_HEAD_FIELDS = tuple(f for f in field_names(AnalysisRecord) if f != "result_json")
_HEAD_COLUMNS, _HEAD_TYPES = record_columns(Analysis, ANALYSIS_HEAD_FIELDS, "a")


def analysis_head(*values: Any, result_json: str = "") -> AnalysisRecord:
    """The record of a row of `ANALYSIS_HEAD_FIELDS`; its document `result_json` when read,
    else empty."""
    fields = dict(zip(ANALYSIS_HEAD_FIELDS, values, strict=True))
    return AnalysisRecord(**fields, result_json=result_json)


_ANALYSES_PAGE = DriverRead(
    f"SELECT {', '.join(_HEAD_COLUMNS)} FROM {Analysis.__tablename__} a "
    "WHERE a.workspace_id = :workspace ORDER BY a.created_at DESC, a.id DESC "
    "LIMIT :limit OFFSET :offset",
    _HEAD_TYPES,
    analysis_head,
)
_ANALYSES_COUNT = DriverRead(
    f"SELECT count(*) FROM {Analysis.__tablename__} WHERE workspace_id = :workspace",
    [Integer()],
    int,
)
