"""The runs of one engine: each run a task with its own cancel scope, in the engine's nursery."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from store import FINISHED_RUN_STATES, RunRecord, RunSource, Store

from ..monitors._market import Marketplace
from ._task import Analyser, execute_run


class RunNotCancellable(Exception):
    def __init__(self, run: RunRecord) -> None:
        super().__init__(f"run {run.id} is already {run.state}")
        self.run = run


class RunStillRunning(Exception):
    def __init__(self, run: RunRecord) -> None:
        super().__init__(f"run {run.id} is {run.state}; cancel it first")
        self.run = run


@dataclass
class RunHandle:
    run_id: str
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    done: trio.Event = field(default_factory=trio.Event)
    cancelled_by_user: bool = False


def new_analysis_id() -> str:
    return f"an_{uuid.uuid4().hex}"


class RunManager:
    def __init__(
        self,
        store: Store,
        market: Marketplace,
        analyser: Analyser,
        nursery: Callable[[], trio.Nursery],
    ) -> None:
        self._store = store
        self._market = market
        self._analyser = analyser
        self._nursery = nursery
        self._running: dict[str, RunHandle] = {}

    async def resume_unfinished(self) -> int:
        """Runs a stopped process left queued or running are started again from the top."""
        unfinished = await self._store.runs.unfinished()
        for run in unfinished:
            await self._store.runs.log(run.id, "restarted after the service restarted")
            self._spawn(run)
        return len(unfinished)

    def _spawn(self, run: RunRecord) -> RunHandle:
        handle = RunHandle(run.id)
        self._running[run.id] = handle
        self._nursery().start_soon(self._run, handle, run)
        return handle

    async def _run(self, handle: RunHandle, run: RunRecord) -> None:
        try:
            with handle.scope:
                await execute_run(
                    self._store,
                    self._market,
                    run,
                    self._analyser,
                    new_analysis_id=new_analysis_id,
                    cancelled_by_user=lambda: handle.cancelled_by_user,
                )
        finally:
            handle.done.set()
            self._running.pop(run.id, None)

    async def start(
        self,
        *,
        run_id: str,
        workspace_id: str,
        label: str | None,
        source: RunSource,
        url: str | None,
        monitor_id: str | None,
        max_items: int,
        replay_of: str | None = None,
    ) -> RunRecord:
        run = await self._store.runs.create(
            run_id=run_id,
            workspace_id=workspace_id,
            label=label,
            source=source,
            url=url,
            monitor_id=monitor_id,
            max_items=max_items,
            replay_of=replay_of,
        )
        self._spawn(run)
        return run

    async def cancel(self, run: RunRecord) -> RunRecord:
        """Cancel a queued or running run; it ends `cancelled` within a second."""
        if run.state in FINISHED_RUN_STATES:
            raise RunNotCancellable(run)
        handle = self._running.get(run.id)
        if handle is not None:
            handle.cancelled_by_user = True
            handle.scope.cancel()
            with trio.move_on_after(5):
                await handle.done.wait()
        else:
            await self._store.runs.finish(run.id, "cancelled")
        refreshed = await self._store.runs.get(run.id, run.workspace_id)
        assert refreshed is not None
        return refreshed

    async def delete(self, run: RunRecord) -> bool:
        if run.state not in FINISHED_RUN_STATES:
            raise RunStillRunning(run)
        return await self._store.runs.delete(run.id, run.workspace_id)

    def is_running(self, run_id: str) -> bool:
        return run_id in self._running

    def running_ids(self) -> list[str]:
        return sorted(self._running)
