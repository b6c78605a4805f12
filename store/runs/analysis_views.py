"""What a page or answer about one analysis reads, in one unit of work.

An analysis never changes once stored, so its document (`result_json`, often hundreds of
kilobytes) is read only when the caller has no copy of it (`with_result`); the rest, which
says whether the analysis still exists in the workspace and what its run and monitor are
called now, is small and read every time, so a cached copy is never served after a delete.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy import String, select
from sqlalchemy.orm import Session
from sqlalchemy.types import TypeEngine

from .._db.driver_reads import DriverRead, Reader, record_columns
from .._db.rows import field_names
from ..monitors.models import Monitor
from ..monitors.records import MonitorRecord
from .models import Analysis, DashboardPin, Run
from .queries import ANALYSIS_HEAD_FIELDS, analysis_head, newest_runs
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


_RUN_FIELDS = field_names(RunRecord)
_MONITOR_FIELDS = field_names(MonitorRecord)
_NEWEST_FIRST = " ORDER BY a.created_at DESC, a.id DESC LIMIT 1"


def _origins_sql(
    *,
    join: str = "",
    where: str = "",
    tail: str = "",
    with_result: bool = False,
    tag: str | None = None,
) -> tuple[str, list[TypeEngine[Any]]]:
    """The analyses of `:workspace` matching `where`, each with its run and that run's
    monitor, in one statement (outer joins: an import has no run, a URL run no monitor),
    and the types of its columns. Read on every dashboard and analysis request, so they go
    to the driver as SQL compiled once (`DriverRead`) instead of statements built and typed
    per request. With `tag`, a first column `candidate` holds that text. Every argument is
    pasted into the SQL as it is: code's constants only, never a request's values (those
    are bound, `:name`)."""
    assert tag is None or tag.isidentifier()
    analysis = (*ANALYSIS_HEAD_FIELDS, "result") if with_result else ANALYSIS_HEAD_FIELDS
    a_columns, a_types = record_columns(Analysis, analysis, "a")
    r_columns, r_types = record_columns(Run, _RUN_FIELDS, "r")
    m_columns, m_types = record_columns(Monitor, _MONITOR_FIELDS, "m")
    tagged = [] if tag is None else [f"'{tag}' AS candidate"]
    sql = (
        f"SELECT {', '.join(tagged + a_columns + r_columns + m_columns)} "
        f"FROM {Analysis.__tablename__} a "
        f"LEFT OUTER JOIN {Run.__tablename__} r "
        "ON r.id = a.run_id AND r.workspace_id = a.workspace_id "
        f"LEFT OUTER JOIN {Monitor.__tablename__} m "
        f"ON m.id = r.monitor_id AND m.workspace_id = a.workspace_id{join} "
        f"WHERE a.workspace_id = :workspace{where}{tail}"
    )
    return sql, a_types + r_types + m_types


def _origin_read(*, where: str, with_result: bool) -> DriverRead[AnalysisOrigin]:
    sql, types = _origins_sql(where=where, with_result=with_result)
    return DriverRead(sql, types, partial(_origin, with_result=with_result))


def _candidates_read() -> DriverRead[tuple[str, AnalysisOrigin]]:
    """The dashboard's candidates in one statement (one round trip, which PostgreSQL
    feels): the pinned analysis, the newest, and the newest that clears the floor
    (`:min_days`, `:min_sales`; the newest itself when it does), each tagged with its name
    and absent when there is none."""
    branches = []
    for name, join, where, tail in (
        ("pinned", f" JOIN {DashboardPin.__tablename__} p ON p.analysis_id = a.id",
         " AND p.workspace_id = :workspace", ""),
        ("latest", "", "", _NEWEST_FIRST),
        ("trusted", "", " AND a.window_days >= :min_days AND a.sales >= :min_sales",
         _NEWEST_FIRST),
    ):  # fmt: skip
        sql, types = _origins_sql(join=join, where=where, tail=tail, tag=name)
        # Each branch its own subquery: only a compound's last SELECT may have a LIMIT.
        branches.append(f"SELECT * FROM ({sql}) {name}")
    return DriverRead(
        " UNION ALL ".join(branches),
        [String(), *types],
        lambda name, *values: (name, _origin(*values, with_result=False)),
    )


def _origin(*values: Any, with_result: bool) -> AnalysisOrigin:
    """An `_origins_sql` row: the analysis' columns (and its document, `with_result`),
    then its run's, then the monitor's."""
    result_at = len(ANALYSIS_HEAD_FIELDS)  # the document, when read
    runs_at = result_at + 1 if with_result else result_at
    monitors_at = runs_at + len(_RUN_FIELDS)
    run, monitor = values[runs_at:monitors_at], values[monitors_at:]
    head = values[: len(ANALYSIS_HEAD_FIELDS)]
    analysis = analysis_head(*head, result_json=values[result_at] if with_result else "")
    return AnalysisOrigin(
        analysis,
        None if run[0] is None else RunRecord(*run),
        None if monitor[0] is None else MonitorRecord(*monitor),
    )


_ASKED = _origin_read(where=" AND a.id = :analysis", with_result=False)
_ASKED_WITH_RESULT = _origin_read(where=" AND a.id = :analysis", with_result=True)
_CANDIDATES = _candidates_read()


def analysis_origin(
    db: Reader, analysis_id: str, workspace_id: str, *, with_result: bool
) -> AnalysisOrigin | None:
    """The analysis in `workspace_id` with its origin; None if it is not there."""
    read = _ASKED_WITH_RESULT if with_result else _ASKED
    return read.first(db, {"workspace": workspace_id, "analysis": analysis_id})


def analysis_result(db: Session, analysis_id: str, workspace_id: str) -> str | None:
    """Only the document of the analysis (None if it is not in the workspace)."""
    found = db.scalar(
        select(Analysis.result).where(
            Analysis.id == analysis_id, Analysis.workspace_id == workspace_id
        )
    )
    return None if found is None else str(found)


def dashboard_view(
    db: Reader,
    workspace_id: str,
    *,
    analysis_id: str | None,
    floor: DepthFloor | None,
    recent_runs: int,
) -> DashboardView:
    """The analysis `analysis_id` (None: none asked), or with a `floor` the candidates the
    dashboard chooses from, none of their documents read; and the `recent_runs` newest runs."""
    mine = {"workspace": workspace_id}
    origin = _ASKED.first(db, mine | {"analysis": analysis_id}) if analysis_id else None
    candidates: dict[str, AnalysisOrigin] = {}
    if floor is not None:
        floored = mine | {"min_days": floor.min_days, "min_sales": floor.min_sales}
        candidates = dict(_CANDIDATES.all(db, floored))
    runs = newest_runs(db, workspace_id, recent_runs) if recent_runs else []
    return DashboardView(
        origin,
        runs,
        pinned=candidates.get("pinned"),
        trusted=candidates.get("trusted"),
        latest=candidates.get("latest"),
    )
