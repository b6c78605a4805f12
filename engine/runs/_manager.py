"""The runs of one engine: each run a task with its own cancel scope, in the engine's nursery.

In cluster mode a run belongs to the node holding its lease: the node that created it, or
the one that took it over after its node died (the run then starts again from the top).
A cancel for a run held elsewhere is sent to that node through the database.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from store import FINISHED_RUN_STATES, NewRun, RunRecord, RunSource, Store

from .._commands import Cancel
from ..cluster import ClusterSettings, encode_command
from ..market import Marketplace
from ._task import Analyser, execute_run

log = logging.getLogger(__name__)

CANCEL_WAIT_SECONDS = 5.0


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
    lease_token: int | None = None


def new_analysis_id() -> str:
    return f"an_{uuid.uuid4().hex}"


class RunManager:
    def __init__(
        self,
        store: Store,
        market: Marketplace,
        analyser: Analyser,
        nursery: Callable[[], trio.Nursery],
        *,
        cluster: ClusterSettings | None = None,
    ) -> None:
        self._store = store
        self._cluster = cluster
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

    async def adopt(self, run: RunRecord, token: int) -> None:
        """Cluster mode: this node now holds the lease of a run another node left unfinished."""
        existing = self._running.get(run.id)
        if existing is not None:
            existing.lease_token = token
            return
        assert self._cluster is not None
        await self._store.runs.log(
            run.id, f"taken over by node {self._cluster.node.node_id}; starting again"
        )
        self._spawn(run, token)

    def lease_tokens(self) -> dict[str, int]:
        return {
            run_id: handle.lease_token
            for run_id, handle in self._running.items()
            if handle.lease_token is not None
        }

    def drop(self, run_id: str) -> None:
        """The lease is gone: stop the run here at once (its owner now runs it)."""
        handle = self._running.pop(run_id, None)
        if handle is not None:
            handle.scope.cancel()

    def cancel_here(self, run_id: str) -> None:
        """A user's cancel, sent by another node, for a run held here."""
        handle = self._running.get(run_id)
        if handle is not None:
            handle.cancelled_by_user = True
            handle.scope.cancel()

    async def stop_all(self) -> None:
        """Shutdown: stop every run here (each stays `running`, to be started again)."""
        handles = list(self._running.values())
        for handle in handles:
            handle.scope.cancel()
        with trio.move_on_after(CANCEL_WAIT_SECONDS):
            for handle in handles:
                await handle.done.wait()

    def _spawn(self, run: RunRecord, lease_token: int | None = None) -> RunHandle:
        handle = RunHandle(run.id, lease_token=lease_token)
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
                    lease_token=handle.lease_token,
                )
        finally:
            handle.done.set()
            if self._running.get(run.id) is handle:
                del self._running[run.id]

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
        include_likely_sales: bool | None = None,
        at_most: int | None = None,
    ) -> RunRecord:
        """Create the run (`queued`) and start it here, or where a node claims it. With
        `at_most` (the plan's runs a day), `QuotaFull` when the workspace has created that
        many today, counted atomically with the insert: nothing is created."""
        run = await self._store.runs.create(
            NewRun(
                run_id=run_id,
                workspace_id=workspace_id,
                label=label,
                source=source,
                url=url,
                monitor_id=monitor_id,
                max_items=max_items,
                replay_of=replay_of,
                include_likely_sales=include_likely_sales,
            ),
            at_most=at_most,
        )
        if self._cluster is None:
            self._spawn(run)
            return run
        token = await self._store.cluster.claim_one(
            "run", run.id, self._cluster.node.node_id, self._cluster.lease_seconds
        )
        if token is not None:  # else a node claimed it first (it was free): it runs there
            self._spawn(run, token)
        return run

    async def cancel(self, run: RunRecord) -> RunRecord:
        """Cancel a queued or running run; it ends `cancelled` within a second."""
        if run.state in FINISHED_RUN_STATES:
            raise RunNotCancellable(run)
        handle = self._running.get(run.id)
        if handle is not None:
            handle.cancelled_by_user = True
            handle.scope.cancel()
            with trio.move_on_after(CANCEL_WAIT_SECONDS):
                await handle.done.wait()
        elif self._cluster is None:
            await self._store.runs.finish(run.id, "cancelled")
        else:
            await self._cancel_in_cluster(run)
        refreshed = await self._store.runs.get(run.id, run.workspace_id)
        assert refreshed is not None
        return refreshed

    async def _cancel_in_cluster(self, run: RunRecord) -> None:
        """Tell the node running it, and wait for it to end; a run no live node holds is
        claimed here for just long enough to mark it cancelled."""
        assert self._cluster is not None
        node_id = self._cluster.node.node_id
        owner = await self._store.cluster.live_owner("run", run.id)
        if owner is None or owner == node_id:
            token = await self._store.cluster.claim_one(
                "run", run.id, node_id, self._cluster.lease_seconds
            )
            if token is not None:
                await self._store.runs.log(run.id, "cancelled")
                await self._store.runs.finish(run.id, "cancelled", lease_token=token)
                return
        await self._store.cluster.send_command("run", run.id, encode_command(Cancel()))
        with trio.move_on_after(CANCEL_WAIT_SECONDS):
            while True:
                current = await self._store.runs.get(run.id, run.workspace_id)
                if current is None or current.state in FINISHED_RUN_STATES:
                    return
                await trio.sleep(0.1)
        log.warning("run %s: its node did not confirm the cancel in time", run.id)

    async def delete(self, run: RunRecord) -> bool:
        if run.state not in FINISHED_RUN_STATES:
            raise RunStillRunning(run)
        return await self._store.runs.delete(run.id, run.workspace_id)

    def is_running(self, run_id: str) -> bool:
        return run_id in self._running

    def running_ids(self) -> list[str]:
        return sorted(self._running)
