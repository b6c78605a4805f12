"""The monitors running on this node: one supervised actor per monitor, and its handle.

The registry is the only writer of the table of running actors. It starts an actor (returning
once the actor is ready: scheduled, on its status board, taking commands), forgets it when
its supervision ends, and stops actors politely (`Stop` after their current step, then their
cancel scope past the grace period) or at once (a lease lost: no write may follow).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass

import trio

from store import MonitorRecord, Store

from .._commands import Command
from .._supervisor import RestartPolicy, supervise
from ..market import Marketplace
from ._actor import MonitorActor, MonitorPolicy
from ._commands import ActorStatus, Envelope
from ._handle import EngineBusy, MonitorHandle, drop_pending
from ._status_board import ActorStatusBoard

COMMAND_BUFFER = 8  # commands queued per actor before a sender is told `EngineBusy`


@dataclass(frozen=True)
class ActorKit:
    """What every monitor actor of a node is built with."""

    store: Store
    market: Marketplace  # the node's shared feeds (`SharedMarketplace`)
    policy: MonitorPolicy
    restart_policy: RestartPolicy
    poll_slots: trio.CapacityLimiter  # polls in flight at once across the node
    after_poll: Callable[[MonitorRecord], Awaitable[object]] | None = None


class MonitorRegistry:
    def __init__(self, kit: ActorKit, nursery: trio.Nursery) -> None:
        """Actors run in `nursery`, which the engine owns."""
        self._kit = kit
        self._nursery = nursery
        self._handles: dict[str, MonitorHandle] = {}

    def __len__(self) -> int:
        return len(self._handles)

    def live(self, monitor_id: str) -> MonitorHandle | None:
        """The monitor's actor on this node, unless none runs (or it has ended)."""
        handle = self._handles.get(monitor_id)
        return None if handle is None or handle.done.is_set() else handle

    def is_running(self, monitor_id: str) -> bool:
        return monitor_id in self._handles

    async def spawn(self, monitor: MonitorRecord, lease_token: int | None = None) -> MonitorHandle:
        """Start supervising the actor of a stored monitor (no-op if it runs already; a new
        `lease_token` then replaces the old one). Returns once the actor is ready."""
        existing = self._handles.get(monitor.id)
        if existing is not None and not existing.done.is_set():
            if lease_token is not None:
                existing.lease_token = lease_token
            await existing.ready.wait()
            return existing
        send, receive = trio.open_memory_channel[Envelope](COMMAND_BUFFER)
        board = ActorStatusBoard(monitor.id, monitor.workspace_id, send)
        handle = MonitorHandle(monitor.id, send, board, trio.Event(), lease_token)
        self._handles[monitor.id] = handle
        kit = self._kit
        actor = MonitorActor(
            monitor.id,
            store=kit.store,
            market=kit.market,
            commands=receive,
            policy=kit.policy,
            status=board,
            poll_slots=kit.poll_slots,
            lease_token=lambda: handle.lease_token,
            after_poll=kit.after_poll,
            initial=monitor,
        )
        try:
            await self._nursery.start(self._run_supervised, handle, actor, receive)
        finally:
            handle.ready.set()
        return handle

    async def _run_supervised(
        self,
        handle: MonitorHandle,
        actor: MonitorActor,
        receive: trio.MemoryReceiveChannel[Envelope],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            with handle.scope:
                await supervise(
                    f"monitor {handle.monitor_id}",
                    actor.run,
                    handle.board,
                    self._kit.restart_policy,
                    task_status=task_status,
                )
        finally:
            drop_pending(receive)
            receive.close()
            handle.board.set_state("stopped")
            handle.done.set()
            if self._handles.get(handle.monitor_id) is handle:
                del self._handles[handle.monitor_id]

    def tell(self, monitor_id: str, command: Command) -> bool:
        """Queue a command nobody waits on; False if no actor runs the monitor here,
        `EngineBusy` if its queue is full."""
        handle = self.live(monitor_id)
        if handle is None:
            return False
        try:
            handle.send.send_nowait(Envelope(command))
        except trio.WouldBlock as err:
            raise EngineBusy(monitor_id) from err
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return False
        return True

    async def stop(self, monitor_ids: Sequence[str], grace_seconds: float) -> None:
        """Stop these actors after their current step; past `grace_seconds` (for them all),
        cancel what is left. Returns once each has ended."""
        handles = [self._handles[m] for m in monitor_ids if m in self._handles]
        for handle in handles:
            handle.ask_to_stop()
        with trio.move_on_after(grace_seconds):
            for handle in handles:
                await handle.done.wait()
        for handle in handles:
            handle.scope.cancel()
            await handle.done.wait()

    async def stop_all_politely(self) -> None:
        """Ask every actor to stop after its current step and wait for each, without a
        deadline of its own: the caller bounds the wait."""
        handles = list(self._handles.values())
        for handle in handles:
            handle.ask_to_stop()
        for handle in handles:
            await handle.done.wait()

    def cancel_all(self) -> None:
        """Cancel every actor where it stands (past the grace period, or a lease given up)."""
        for handle in list(self._handles.values()):
            handle.scope.cancel()

    def drop(self, monitor_id: str) -> None:
        """Stop at once, mid-poll if need be, and forget: the lease is gone, so is the right
        to write."""
        handle = self._handles.pop(monitor_id, None)
        if handle is not None:
            handle.scope.cancel()

    def lease_tokens(self) -> dict[str, int]:
        tokens = {monitor_id: h.lease_token for monitor_id, h in self._handles.items()}
        return {monitor_id: t for monitor_id, t in tokens.items() if t is not None}

    def statuses(self) -> list[ActorStatus]:
        return [handle.board.snapshot() for handle in self._handles.values()]

    def statuses_json(self) -> str:
        return json.dumps([asdict(s) for s in self.statuses()], separators=(",", ":"))
