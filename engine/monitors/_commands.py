"""Commands a monitor actor understands, and the status it reports. Frozen, dispatched by type."""

from __future__ import annotations

from dataclasses import dataclass

import trio


@dataclass(frozen=True, slots=True)
class PollNow:
    pass


@dataclass(frozen=True, slots=True)
class Pause:
    pass


@dataclass(frozen=True, slots=True)
class Resume:
    pass


@dataclass(frozen=True, slots=True)
class Stop:
    pass


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


@dataclass(frozen=True, slots=True)
class GetStatus:
    reply_to: trio.MemorySendChannel[ActorStatus]


Command = PollNow | Pause | Resume | Stop | GetStatus
