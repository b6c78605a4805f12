"""Where a command for a monitor or a run goes: its actor on this node, the node that holds it
(cluster mode, through the database), or an actor started here for it.

The engine itself never writes a monitor's status: `pause` and `resume` are carried out by
the monitor's actor, wherever it runs, and return once it has (`CommandRouter.order`).

Commands to another node are the same values as here, serialised (`engine/cluster/_codec.py`).
A sender waits for a pause or resume to show in the database; the owner drops a command
older than the sender's wait (`command_timeout_seconds`, on the database's clock) and skips
one its actor comes to past it, so a sender that gives up a moment later (`OWNER_MARGIN`) is
right to say nothing changed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from store import CommandRecord, MonitorRecord, Store, TargetKind

from ._commands import Cancel, Pause, Resume, Stop
from .cluster import CommandRefused, RemoteCommand, decode_command, encode_command
from .monitors import EngineBusy, Envelope, MonitorActor, MonitorHandle

log = logging.getLogger(__name__)

# How much longer than `command_timeout_seconds` a node waits to see a command it sent another
# node take effect: the time between its clock starting and the row being written.
OWNER_MARGIN_SECONDS = 1.0


class CommandRouter:
    def __init__(
        self,
        store: Store,
        *,
        node_id: str | None,
        timeout: float,
        live: Callable[[str], MonitorHandle | None],
        start_actor: Callable[[MonitorRecord], Awaitable[MonitorHandle | None]],
        cancel_run_here: Callable[[str], None],
    ) -> None:
        """`live(id)`: the monitor's actor on this node, if any; `start_actor(monitor)`: start
        one here (cluster: once claimed; None if another node claimed it first)."""
        self._store = store
        self._node_id = node_id
        self._timeout = timeout
        self._live = live
        self._start_actor = start_actor
        self._cancel_run_here = cancel_run_here

    async def order(self, monitor_id: str, command: Pause | Resume) -> None:
        """Have the monitor's actor carry `command` out, wherever it runs, and return once it
        has:

        - an actor runs here: it is sent the command and its reply awaited;
        - another node holds the monitor (cluster): that node is sent the command, and its
          effect awaited in the database;
        - no actor runs anywhere: one is started here and sent the command, unless there is
          nothing to do: pausing a monitor that wants no actor (it is paused, and
          bootstrapped, already), or one that was deleted.

        `EngineBusy`, with nothing changed, when the actor cannot take the command now."""
        handle = self._live(monitor_id)
        if handle is None and await self._through_owner(monitor_id, command):
            return
        if handle is None:
            monitor = await self._store.monitors.get(monitor_id, None)
            if monitor is None:
                return
            if isinstance(command, Pause) and not MonitorActor.wants_polls(monitor):
                return
            handle = await self._start_actor(monitor)
            if handle is None:  # another node claimed it meanwhile: it runs there
                if await self._through_owner(monitor_id, command):
                    return
                raise EngineBusy(monitor_id, "is changing nodes")
        await handle.ask(command, self._timeout)

    async def tell_owner(self, kind: TargetKind, target_id: str, command: RemoteCommand) -> bool:
        """Send `command` to the node holding a live lease on the target, if it is another
        node; False when no other node holds it (single node: always)."""
        if self._node_id is None:
            return False
        owner = await self._store.cluster.live_owner(kind, target_id)
        if owner is None or owner == self._node_id:
            return False
        await self._store.cluster.send_command(kind, target_id, encode_command(command))
        return True

    async def _through_owner(self, monitor_id: str, command: Pause | Resume) -> bool:
        """Send `command` to the node holding the monitor, if another node does, and wait for
        its effect in the database; False when no other node holds it."""
        if not await self.tell_owner("monitor", monitor_id, command):
            return False
        wanted = "paused" if isinstance(command, Pause) else "active"
        give_up = trio.current_time() + self._timeout + OWNER_MARGIN_SECONDS
        pause = 0.02
        while True:
            monitor = await self._store.monitors.get(monitor_id, None)
            if monitor is None or monitor.status == wanted:
                return True
            if trio.current_time() >= give_up:
                raise EngineBusy(monitor_id, f"was not {wanted} by its node in {self._timeout:g} s")
            await trio.sleep(min(pause, max(0.0, give_up - trio.current_time())))
            pause = min(pause * 2, 0.25)

    def deliver(self, record: CommandRecord) -> None:
        """A command another node sent for work held here. One that does not decode, or does
        not fit its target, is refused with a log; one older than the senders' wait is
        dropped (its sender said nothing changed), and so is one the actor has no room for."""
        try:
            command = decode_command(record.command)
        except CommandRefused as err:
            log.warning("cluster command %s for %s %s refused: %s",
                        record.id, record.target_kind, record.target_id, err)  # fmt: skip
            return
        if (record.target_kind == "run") != isinstance(command, Cancel):
            log.warning("cluster command %r is not for a %s; refused", command, record.target_kind)
            return
        if isinstance(command, Cancel):
            self._cancel_run_here(record.target_id)
            return
        handle = self._live(record.target_id)
        if handle is None:
            return
        if isinstance(command, Stop):
            handle.ask_to_stop()
            return
        left = self._timeout - record.age_seconds
        if left <= 0:
            log.warning("monitor %s: cluster command %r came too late; dropped",
                        record.target_id, command)  # fmt: skip
            return
        try:
            handle.post(Envelope(command, deadline=trio.current_time() + left))
        except EngineBusy:
            log.warning("monitor %s busy; cluster command %r dropped", record.target_id, command)
