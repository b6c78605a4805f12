"""A running monitor actor as the engine holds it: its command queue, its status board, and
how to tell it something (nobody waits) or ask it something (the caller waits for its reply).

The 429 rule, said out loud: a command that cannot be queued at once (the queue is full) is
`EngineBusy` before anything changed, and so is one the actor has not taken when its sender
stops waiting (it is withdrawn, and skipped when the actor comes to it) or one still queued
when the actor ends. A command the actor has taken is waited for to the end: its one write is
under way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from .._commands import Command, Stop
from ._commands import Envelope, Reply
from ._status_board import ActorStatusBoard


class EngineBusy(Exception):
    """A monitor's actor could not take a command now: its queue is full, it did not take the
    command in time (which is then withdrawn), or it stopped first. Nothing changed; the API
    answers 429 `busy` with `Retry-After`."""

    def __init__(self, monitor_id: str, reason: str = "has too many commands queued") -> None:
        super().__init__(f"monitor {monitor_id} {reason}; try again shortly")
        self.monitor_id = monitor_id


@dataclass
class MonitorHandle:
    monitor_id: str
    send: trio.MemorySendChannel[Envelope]
    board: ActorStatusBoard
    done: trio.Event
    lease_token: int | None = None  # the fencing token of this node's claim (cluster mode)
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    ready: trio.Event = field(default_factory=trio.Event)  # its actor takes commands

    def ask_to_stop(self) -> None:
        """Queue `Stop` (the actor ends after its current step); the scope is the fallback."""
        try:
            self.send.send_nowait(Envelope(Stop()))
        except trio.WouldBlock:
            self.scope.cancel()
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    def post(self, envelope: Envelope) -> None:
        """Queue without waiting: `EngineBusy` (nothing queued) if the queue is full or closed."""
        try:
            self.send.send_nowait(envelope)
        except trio.WouldBlock as err:
            raise EngineBusy(self.monitor_id) from err
        except (trio.ClosedResourceError, trio.BrokenResourceError) as err:
            raise EngineBusy(self.monitor_id, "is stopping") from err

    async def ask(self, command: Command, withdraw_after: float) -> None:
        """Have the actor carry `command` out, and return once it has. `EngineBusy`, nothing
        changed, if it cannot be queued, is not taken within `withdraw_after` seconds (it is
        withdrawn then: not a timeout of the call, since a command taken by then is waited
        for to the end), or the actor ends first; the command's own error (a database
        outage, say) if it failed."""
        reply = Reply()
        self.post(Envelope(command, reply))
        with trio.move_on_after(withdraw_after):
            await reply.wait()
        if not reply.settled:
            if reply.withdraw():  # not taken: it never will be
                raise EngineBusy(
                    self.monitor_id, f"did not take the command in {withdraw_after:g} s"
                )
            await reply.wait()  # taken: its one write is under way
        if reply.state == "failed" and reply.error is not None:
            raise reply.error
        if reply.state != "done":
            raise EngineBusy(self.monitor_id, "stopped before it took the command")


def drop_pending(receive: trio.MemoryReceiveChannel[Envelope]) -> None:
    """Settle the replies of the commands an ended actor never took (nothing changed)."""
    while True:
        try:
            envelope = receive.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
            return
        if envelope.reply is not None:
            envelope.reply.dropped()
