"""The trio-facing facade of runs and analyses: `store.runs`."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from .._db.driver_reads import Reader
from ..cluster.fence import fence
from . import analysis_views as views
from . import dashboard_pins as pins
from . import queries as repo
from .analysis_views import AnalysisOrigin, DashboardView, DepthFloor
from .records import (
    AnalysisRecord,
    AnalysisSource,
    NewAnalysis,
    NewRun,
    RunRecord,
    RunState,
)

if TYPE_CHECKING:
    from .._store import Store


class RunStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def create(self, new: NewRun, *, at_most: int | None = None) -> RunRecord:
        """With `at_most` (the plan's runs a day): `QuotaFull` when the workspace has created
        as many runs and imports today (UTC), checked atomically with the insert."""
        now = self._store.clock()

        def work(db: Session) -> RunRecord:
            if at_most is not None:
                repo.admit_run(db, new.workspace_id, at_most, now)
            return repo.create_run(db, new, now)

        return await self._store.unit(work)

    async def get(self, run_id: str, workspace_id: str | None) -> RunRecord | None:
        return await self._store.glance(lambda db: repo.get_run(db, run_id, workspace_id))

    async def in_workspace(
        self, workspace_id: str, offset: int, limit: int
    ) -> tuple[list[RunRecord], int]:
        return await self._store.read(lambda db: repo.list_runs(db, workspace_id, offset, limit))

    async def count_since(self, workspace_id: str, since: datetime) -> int:
        return await self._store.unit(lambda db: repo.count_runs_since(db, workspace_id, since))

    async def mark_running(self, run_id: str) -> None:
        now = self._store.clock()
        await self._store.unit(
            lambda db: repo.update_run(db, run_id, state="running", started_at=now)
        )

    async def progress(self, run_id: str, progress: float, items: int) -> None:
        await self._store.unit(
            lambda db: repo.update_run(db, run_id, progress=progress, items=items)
        )

    async def finish(
        self, run_id: str, state: RunState, *, lease_token: int | None = None, **values: Any
    ) -> bool:
        """Move the run to a final state (first writer wins); with `lease_token`, only while
        this node's lease holds (`LeaseLost` otherwise)."""
        now = self._store.clock()

        def work(db: Session) -> bool:
            if lease_token is not None:
                fence(db, "run", run_id, lease_token)
            return repo.finish_run(db, run_id, state, at=now, **values)

        return await self._store.unit(work)

    async def unfinished(self) -> list[RunRecord]:
        return await self._store.unit(repo.unfinished_runs)

    async def log(self, run_id: str, line: str) -> None:
        now = self._store.clock()
        await self._store.unit(lambda db: repo.add_log_line(db, run_id, now, line))

    async def log_tail(self, run_id: str, lines: int) -> list[tuple[datetime, str]]:
        return await self._store.unit(lambda db: repo.log_tail(db, run_id, lines))

    async def delete(self, run_id: str, workspace_id: str) -> bool:
        return await self._store.unit(lambda db: repo.delete_run(db, run_id, workspace_id))

    async def add_analysis(
        self, new: NewAnalysis, *, lease_token: int | None = None, at_most: int | None = None
    ) -> AnalysisRecord:
        """Store an analysis; with `lease_token` (and a run), only while this node's lease on
        the run holds (`LeaseLost` otherwise). With `at_most`, an import counted as a run:
        `QuotaFull` as `create`'s."""
        now = self._store.clock()

        def work(db: Session) -> AnalysisRecord:
            if at_most is not None:
                repo.admit_run(db, new.workspace_id, at_most, now)
            if lease_token is not None and new.run_id is not None:
                fence(db, "run", new.run_id, lease_token)
            return repo.add_analysis(db, new, now)

        return await self._store.unit(work)

    async def succeed_with_analysis(
        self,
        run: RunRecord,
        *,
        analysis_id: str,
        source: AnalysisSource,
        result_json: str,
        items: int,
        lease_token: int | None = None,
        window_days: float | None = None,
        sales: int | None = None,
    ) -> AnalysisRecord | None:
        """Store a run's analysis, log it and mark the run succeeded, in one transaction.

        In two, a crash between them left an analysis whose run was still unfinished, so the
        restarted node ran it again and stored a second one. None, and nothing stored, when
        the run had already ended (cancelled meanwhile); `LeaseLost` when, with
        `lease_token`, another node holds the run by now. `window_days` and `sales` are what
        the analysis rests on (`engine.analysis.evidence_depth`), kept for the dashboard."""
        now = self._store.clock()

        def work(db: Session) -> AnalysisRecord:
            if lease_token is not None:
                fence(db, "run", run.id, lease_token)
            new = NewAnalysis(
                analysis_id=analysis_id,
                workspace_id=run.workspace_id,
                run_id=run.id,
                source=source,
                source_url=run.url,
                result_json=result_json,
                window_days=window_days,
                sales=sales,
            )
            analysis = repo.add_analysis(db, new, now)
            repo.add_log_line(db, run.id, now, f"done: analysis {analysis.id}")
            ended = repo.finish_run(
                db,
                run.id,
                "succeeded",
                at=now,
                analysis_id=analysis.id,
                progress=1.0,
                items=items,
            )
            if not ended:
                raise _RunAlreadyEnded
            return analysis

        try:
            return await self._store.unit(work)
        except _RunAlreadyEnded:
            return None

    async def analysis(self, analysis_id: str, workspace_id: str | None) -> AnalysisRecord | None:
        return await self._store.unit(lambda db: repo.get_analysis(db, analysis_id, workspace_id))

    async def analysis_origin(
        self, analysis_id: str, workspace_id: str, *, with_result: bool
    ) -> AnalysisOrigin | None:
        """The analysis with its run and monitor, in one statement; its document only
        `with_result` (see `store/runs/analysis_views.py`)."""

        def work(db: Reader) -> AnalysisOrigin | None:
            return views.analysis_origin(db, analysis_id, workspace_id, with_result=with_result)

        # Found by key; its document, often hundreds of kilobytes, is read in a worker thread.
        return await (self._store.read(work) if with_result else self._store.glance(work))

    async def analysis_result(self, analysis_id: str, workspace_id: str) -> str | None:
        return await self._store.unit(
            lambda db: views.analysis_result(db, analysis_id, workspace_id)
        )

    async def dashboard(
        self,
        workspace_id: str,
        *,
        analysis_id: str | None,
        floor: DepthFloor | None,
        recent_runs: int,
    ) -> DashboardView:
        """`analysis_id`'s analysis, or with `floor` the dashboard's candidates (see
        `analysis_views.dashboard_view`), and the newest runs: found by key or by one seek
        of an index each (`ix_analyses_above_floor` for the newest above the floor), a
        glance."""
        return await self._store.glance(
            lambda db: views.dashboard_view(
                db, workspace_id, analysis_id=analysis_id, floor=floor, recent_runs=recent_runs
            )
        )

    async def pin(self, workspace_id: str, analysis_id: str) -> bool:
        """Pin the analysis to the workspace's dashboard (replacing any pin); False when it
        is not the workspace's."""
        now = self._store.clock()
        return await self._store.unit(
            lambda db: pins.pin_analysis(db, workspace_id, analysis_id, now)
        )

    async def unpin(self, workspace_id: str) -> bool:
        return await self._store.unit(lambda db: pins.unpin(db, workspace_id))

    async def pinned(self, workspace_id: str) -> str | None:
        return await self._store.unit(lambda db: pins.pinned_analysis(db, workspace_id))

    async def analyses(
        self, workspace_id: str, offset: int, limit: int
    ) -> tuple[list[AnalysisRecord], int]:
        """A page of the workspace's analyses, newest first, without their documents
        (`result_json` is empty: `analysis` reads one whole), and how many there are."""
        return await self._store.read(
            lambda db: repo.list_analyses(db, workspace_id, offset, limit)
        )


class _RunAlreadyEnded(Exception):
    """Raised inside a unit of work to roll it back: the run ended before it could succeed."""
