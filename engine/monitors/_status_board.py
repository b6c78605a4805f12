"""What a monitor's actor last said about itself, for the operators' status endpoint."""

from __future__ import annotations

from dataclasses import replace

import trio

from store import MonitorRecord

from ._commands import ActorStatus, Envelope


class ActorStatusBoard:
    """What an actor last said about itself; read by the ops endpoint without a round trip."""

    def __init__(
        self, monitor_id: str, workspace_id: str, queue: trio.MemorySendChannel[Envelope]
    ) -> None:
        self._queue = queue
        self._status = ActorStatus(
            kind="monitor",
            monitor_id=monitor_id,
            workspace_id=workspace_id,
            state="starting",
            last_poll_at=None,
            next_poll_at=None,
            consecutive_errors=0,
            restarts=0,
            queue_depth=0,
            last_error=None,
        )

    def update(self, monitor: MonitorRecord, state: str) -> None:
        self._status = replace(
            self._status,
            state=state,
            last_poll_at=monitor.last_poll_at.isoformat() if monitor.last_poll_at else None,
            next_poll_at=monitor.next_poll_at.isoformat() if monitor.next_poll_at else None,
            consecutive_errors=monitor.consecutive_errors,
            last_error=monitor.last_error,
        )

    def polled(self, at: str) -> None:
        self._status = replace(self._status, last_poll_at=at, consecutive_errors=0, last_error=None)

    def restarted(self, error: str) -> None:
        self._status = replace(
            self._status, state="restarting", restarts=self._status.restarts + 1, last_error=error
        )

    def set_state(self, state: str) -> None:
        self._status = replace(self._status, state=state)

    def snapshot(self) -> ActorStatus:
        return replace(self._status, queue_depth=self._queue.statistics().current_buffer_used)
