"""The envelope a monitor's command travels in to its actor, and the status the actor reports.

The commands themselves are values of `engine/_commands.py`, the same on every node. What
only makes sense in this process, the reply its sender awaits and the deadline past which it
is no longer wanted, travels beside a command in an `Envelope`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import trio

from .._commands import Command


class Reply:
    """The answer to one command, awaited by whoever sent it.

    The actor `take`s it before acting on the command (a command its sender withdrew, having
    waited long enough, is skipped: nothing changes after the sender was told so), then
    settles it: `done`, `failed` (the error the command raised), or `dropped` (the actor ended
    or was cancelled before the command took effect; a cancelled write is rolled back).
    Everything here runs on the Trio thread, so each check-and-set is atomic.
    """

    def __init__(self) -> None:
        self.state: Literal["queued", "taken", "withdrawn", "done", "failed", "dropped"] = "queued"
        self.error: Exception | None = None
        self._settled = trio.Event()

    def take(self) -> bool:
        """The actor is about to act; False if the sender withdrew the command."""
        if self.state != "queued":
            return False
        self.state = "taken"
        return True

    def withdraw(self) -> bool:
        """The sender gives up; False if the actor took the command already (it is under way)."""
        if self.state != "queued":
            return False
        self.state = "withdrawn"
        self._settled.set()
        return True

    def done(self) -> None:
        self._settle("done")

    def failed(self, error: Exception) -> None:
        self.error = error
        self._settle("failed")

    def dropped(self) -> None:
        self._settle("dropped")

    def _settle(self, state: Literal["done", "failed", "dropped"]) -> None:
        if self._settled.is_set():
            return
        self.state = state
        self._settled.set()

    @property
    def settled(self) -> bool:
        return self._settled.is_set()

    async def wait(self) -> None:
        await self._settled.wait()


@dataclass(frozen=True, slots=True)
class Envelope:
    """A command on its way to an actor. `deadline` (trio time) is when its sender stops
    waiting for it: a command still queued then is skipped, never carried out late."""

    command: Command
    reply: Reply | None = None
    deadline: float = math.inf


@dataclass(frozen=True, slots=True)
class ActorStatus:
    kind: str
    monitor_id: str
    workspace_id: str
    state: str
    last_poll_at: str | None
    next_poll_at: str | None
    consecutive_errors: int
    restarts: int
    queue_depth: int
    last_error: str | None
