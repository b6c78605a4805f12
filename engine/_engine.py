"""The Engine: owner of every long-lived actor (monitors, later runs) and their nursery.

`async with Engine(store, market) as engine:` opens the nursery and re-spawns every monitor
that was active (or still bootstrapping) so a restart loses nothing. Leaving the block asks
each actor to stop after its current step, waits up to `grace_seconds`, then cancels.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import partial
from types import TracebackType

import trio

from store import DatabaseUnavailable, MonitorRecord, Store

from .monitors._actor import ActorStatusBoard, MonitorActor, MonitorPolicy
from .monitors._commands import ActorStatus, Command, Pause, PollNow, Resume, Stop
from .monitors._market import Marketplace
from .monitors._supervisor import RestartPolicy, supervise
from .runs._analyser import analyse_evidence
from .runs._manager import RunManager
from .runs._task import Analyser

log = logging.getLogger(__name__)

COMMAND_BUFFER = 8


class EngineBusy(Exception):
    def __init__(self, monitor_id: str) -> None:
        super().__init__(f"monitor {monitor_id} has too many commands queued; try again shortly")
        self.monitor_id = monitor_id


@dataclass(frozen=True)
class EngineSettings:
    monitor_policy: MonitorPolicy = field(default_factory=MonitorPolicy)
    restart_policy: RestartPolicy = field(default_factory=RestartPolicy)
    grace_seconds: float = 10.0
    poll_concurrency: int = 16  # polls in flight at once across every monitor of this node


@dataclass
class MonitorHandle:
    monitor_id: str
    send: trio.MemorySendChannel[Command]
    board: ActorStatusBoard
    done: trio.Event
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)

    def ask_to_stop(self) -> None:
        """Queue `Stop` (the actor ends after its current step); the scope is the fallback."""
        try:
            self.send.send_nowait(Stop())
        except trio.WouldBlock:
            self.scope.cancel()
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass


class Engine:
    def __init__(
        self,
        store: Store,
        market: Marketplace,
        settings: EngineSettings | None = None,
        analyser: Analyser = analyse_evidence,
    ) -> None:
        self.store = store
        self.market = market
        self.settings = settings or EngineSettings()
        self._monitors: dict[str, MonitorHandle] = {}
        self.runs = RunManager(store, market, analyser, lambda: self.nursery)
        self._poll_slots = trio.CapacityLimiter(self.settings.poll_concurrency)
        self.resumed = trio.Event()  # set once previous work has been re-spawned
        self._nursery_manager = trio.open_nursery()
        self._nursery: trio.Nursery | None = None

    @property
    def nursery(self) -> trio.Nursery:
        if self._nursery is None:
            raise RuntimeError("Engine used outside its `async with` block")
        return self._nursery

    async def __aenter__(self) -> Engine:
        self._nursery = await self._nursery_manager.__aenter__()
        self.nursery.start_soon(self._resume_previous_work)
        return self

    async def _resume_previous_work(self) -> None:
        """Re-spawn the monitors and runs a previous process left going.

        In the background and retried: a database that is down at start-up must not keep the
        service (and its /health, which says 503 meanwhile) from starting.
        """
        delay = 0.5
        while True:
            try:
                for monitor in await self.store.monitors.to_resume():
                    await self.spawn_monitor(monitor)
                resumed_runs = await self.runs.resume_unfinished()
            except DatabaseUnavailable as err:
                log.warning("cannot resume previous work yet (%s); retry in %.0f s", err, delay)
                await trio.sleep(delay)
                delay = min(delay * 2, 30.0)
                continue
            log.info("engine resumed %d monitors, %d runs", len(self._monitors), resumed_runs)
            self.resumed.set()
            return

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        try:
            with trio.CancelScope(shield=True), trio.move_on_after(self.settings.grace_seconds):
                await self._stop_all()
            self.nursery.cancel_scope.cancel()
            return await self._nursery_manager.__aexit__(exc_type, exc, tb)
        finally:
            self._nursery = None

    async def _stop_all(self) -> None:
        for handle in list(self._monitors.values()):
            handle.ask_to_stop()
        for handle in list(self._monitors.values()):
            await handle.done.wait()

    # -- monitors ------------------------------------------------------------------------------

    async def spawn_monitor(self, monitor: MonitorRecord) -> MonitorHandle:
        """Start supervising the actor of a stored monitor (no-op if it runs already)."""
        existing = self._monitors.get(monitor.id)
        if existing is not None and not existing.done.is_set():
            return existing
        send, receive = trio.open_memory_channel[Command](COMMAND_BUFFER)
        board = ActorStatusBoard(monitor.id, monitor.workspace_id, send)
        handle = MonitorHandle(monitor.id, send, board, trio.Event())
        self._monitors[monitor.id] = handle
        actor = MonitorActor(
            monitor.id,
            store=self.store,
            market=self.market,
            commands=receive,
            policy=self.settings.monitor_policy,
            status=board,
            poll_slots=self._poll_slots,
        )
        self.nursery.start_soon(self._run_supervised, handle, actor, receive)
        return handle

    async def _run_supervised(
        self,
        handle: MonitorHandle,
        actor: MonitorActor,
        receive: trio.MemoryReceiveChannel[Command],
    ) -> None:
        try:
            with handle.scope, receive:
                await supervise(
                    f"monitor {handle.monitor_id}",
                    partial(actor.run),
                    handle.board,
                    self.settings.restart_policy,
                )
        finally:
            handle.board.set_state("stopped")
            handle.done.set()
            if self._monitors.get(handle.monitor_id) is handle:
                del self._monitors[handle.monitor_id]

    async def start_monitor(
        self,
        *,
        monitor_id: str,
        workspace_id: str,
        url: str,
        label: str | None,
        interval_seconds: int,
        page_cap: int,
        source_analysis_id: str | None = None,
    ) -> MonitorRecord:
        """Create the monitor (status `paused`) and start its actor; the bootstrap poll runs in
        the background and moves it to `active`."""
        monitor = await self.store.monitors.create(
            monitor_id=monitor_id,
            workspace_id=workspace_id,
            url=url,
            label=label,
            interval_seconds=interval_seconds,
            page_cap=page_cap,
            source_analysis_id=source_analysis_id,
        )
        await self.spawn_monitor(monitor)
        return monitor

    def _send(self, monitor_id: str, command: Command) -> bool:
        handle = self._monitors.get(monitor_id)
        if handle is None:
            return False
        try:
            handle.send.send_nowait(command)
        except trio.WouldBlock as err:
            raise EngineBusy(monitor_id) from err
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return False
        return True

    async def pause(self, monitor: MonitorRecord) -> None:
        """Stop polling until resumed; takes effect now (the actor is woken to notice)."""
        await self.store.monitors.set_status(monitor.id, "paused")
        self._send(monitor.id, Pause())

    async def resume(self, monitor: MonitorRecord) -> None:
        """Resume polling (also out of `error`); restarts the actor if it is not running."""
        await self.store.monitors.set_status(monitor.id, "active", reset_errors=True)
        if not self._send(monitor.id, Resume()):
            refreshed = await self.store.monitors.get(monitor.id, None)
            if refreshed is not None:
                await self.spawn_monitor(refreshed)

    def poll_now(self, monitor_id: str) -> bool:
        return self._send(monitor_id, PollNow())

    async def delete_monitor(self, monitor: MonitorRecord) -> bool:
        """Stop the actor (after its current step, at most the grace period), delete the data."""
        handle = self._monitors.get(monitor.id)
        if handle is not None:
            handle.ask_to_stop()
            with trio.move_on_after(self.settings.grace_seconds):
                await handle.done.wait()
            handle.scope.cancel()
            await handle.done.wait()
        return await self.store.monitors.delete(monitor.id, monitor.workspace_id)

    def actors(self) -> list[ActorStatus]:
        return [handle.board.snapshot() for handle in self._monitors.values()]

    def is_running(self, monitor_id: str) -> bool:
        return monitor_id in self._monitors
