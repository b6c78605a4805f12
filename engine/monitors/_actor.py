"""A monitor actor: owns one monitor's command channel and schedule, polls politely.

It runs until `Stop`, cancellation, or (cluster mode) a write refused because another node
claimed the monitor (`LeaseLost`: the actor ends, it is not restarted). Poll failures are
recorded on the monitor and backed off (they never end the actor); after
`max_consecutive_errors` the monitor goes to `error`, where it keeps trying every
`error_retry_seconds` (an hour by default: a blocked or frozen marketplace is not asked more)
and returns to `active` by itself at the first poll that succeeds; `Resume` tries at once.
Anything else that goes wrong (a database outage, a bug) escapes to the supervisor, which
restarts it.
"""

from __future__ import annotations

import logging
import math
import random
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta

import trio

from store import LeaseLost, MonitorRecord, Store

from ._commands import ActorStatus, Command, GetStatus, Pause, PollNow, Resume, Stop
from ._market import Marketplace, SuspectedBlock
from ._poll import ConfirmPolicy, poll_once

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MonitorPolicy:
    max_consecutive_errors: int = 5
    max_backoff_seconds: float = 1800.0
    error_retry_seconds: float = 3600.0  # how often a monitor in `error` tries again
    poll_timeout_seconds: float = 300.0
    confirm: ConfirmPolicy = field(default_factory=ConfirmPolicy)


class MonitorStopped(Exception):
    """The actor was told to stop; the supervisor must not restart it."""


def error_backoff(interval: float, consecutive: int, cap: float) -> float:
    """Capped exponential backoff with full jitter, never shorter than the normal interval."""
    ceiling = min(cap, interval * 2 ** max(0, consecutive - 1))
    return max(interval, random.uniform(0, ceiling))


class MonitorActor:
    def __init__(
        self,
        monitor_id: str,
        *,
        store: Store,
        market: Marketplace,
        commands: trio.MemoryReceiveChannel[Command],
        policy: MonitorPolicy,
        status: ActorStatusBoard,
        poll_slots: trio.CapacityLimiter,
        lease_token: Callable[[], int | None] = lambda: None,
        after_poll: Callable[[MonitorRecord], Awaitable[object]] | None = None,
    ) -> None:
        """`after_poll(monitor)` runs after each successful poll, outside the poll's slot
        (the niche alerts' analysis); it must not raise but for cancellation."""
        self.monitor_id = monitor_id
        self._store = store
        self._market = market
        self._commands = commands
        self._policy = policy
        self._board = status
        self._poll_slots = poll_slots
        self._lease_token = lease_token
        self._after_poll = after_poll
        self._next_poll = 0.0  # trio time; 0 means "now"

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            await self._run(task_status)
        except LeaseLost as err:
            log.info("monitor %s: %s; this node stops running it", self.monitor_id, err)
            raise MonitorStopped(self.monitor_id) from err

    async def _run(self, task_status: trio.TaskStatus[None]) -> None:
        monitor = await self._load()
        self._schedule_from(monitor)
        task_status.started()
        while True:
            monitor = await self._load()
            deadline = self._next_poll if self._wants_polls(monitor) else math.inf
            self._board.update(monitor, "idle" if deadline < math.inf else monitor.status)
            command: Command | None = None
            with trio.move_on_at(deadline):
                try:
                    command = await self._commands.receive()
                except trio.EndOfChannel:
                    raise MonitorStopped(self.monitor_id) from None
            # Handled outside the deadline's scope, so a poll falling due cannot cut it short.
            if command is not None:
                await self._handle(command, monitor)
            else:
                await self._poll(monitor)

    async def _load(self) -> MonitorRecord:
        monitor = await self._store.monitors.get(self.monitor_id, None)
        if monitor is None:
            raise MonitorStopped(self.monitor_id)
        return monitor

    @staticmethod
    def _wants_polls(monitor: MonitorRecord) -> bool:
        return monitor.status in ("active", "error") or (
            monitor.status == "paused" and monitor.bootstrapped_at is None
        )

    def _schedule_from(self, monitor: MonitorRecord) -> None:
        """After a (re)start, honour the stored next poll time instead of polling at once."""
        if monitor.next_poll_at is None:
            self._next_poll = trio.current_time()
            return
        wait = (monitor.next_poll_at - self._store.clock()).total_seconds()
        self._next_poll = trio.current_time() + max(0.0, wait)

    async def _handle(self, command: Command, monitor: MonitorRecord) -> None:
        match command:
            case PollNow():
                self._next_poll = trio.current_time()
            case Pause():
                await self._store.monitors.set_status(self.monitor_id, "paused")
            case Resume():
                await self._store.monitors.set_status(self.monitor_id, "active", reset_errors=True)
                self._next_poll = trio.current_time()
            case Stop():
                raise MonitorStopped(self.monitor_id)
            case GetStatus(reply_to=reply_to):
                with trio.move_on_after(1):
                    await reply_to.send(self._board.snapshot())

    async def _poll(self, monitor: MonitorRecord) -> None:
        # Polls queue here, cheaply, rather than for database connections (whose pool would
        # time out under a thousand monitors); the wait shows as schedule lag.
        async with self._poll_slots:
            polled = await self._poll_now(monitor)
        if polled and self._after_poll is not None:
            await self._after_poll(monitor)

    async def _poll_now(self, monitor: MonitorRecord) -> bool:
        """One poll, its failure recorded and backed off; True when it succeeded."""
        self._board.update(monitor, "polling")
        started = self._store.clock()
        try:
            with trio.fail_after(self._policy.poll_timeout_seconds):
                record = await poll_once(
                    self._store,
                    self._market,
                    monitor,
                    now=started,
                    lease_token=self._lease_token(),
                    policy=self._policy.confirm,
                )
        except LeaseLost:
            raise
        except Exception as err:
            kind: str | None
            if isinstance(err, trio.TooSlowError):
                reason = f"poll timed out after {self._policy.poll_timeout_seconds:.0f} s"
                kind = "unavailable"
            else:
                reason = f"{type(err).__name__}: {err}"[:500]
                kind = (
                    SuspectedBlock.kind
                    if isinstance(err, SuspectedBlock)
                    else self._market.failure_kind(err)
                )
            failures = monitor.consecutive_errors + 1
            delay = (
                self._policy.error_retry_seconds  # in `error` from now on: the long retry
                if failures >= self._policy.max_consecutive_errors
                else error_backoff(
                    monitor.interval_seconds, failures, self._policy.max_backoff_seconds
                )
            )
            updated = await self._store.monitors.record_poll_error(
                self.monitor_id,
                poll_id=f"poll_{uuid.uuid4().hex}",
                started_at=started,
                error=reason,
                kind=kind,
                next_poll_at=self._store.clock() + timedelta(seconds=delay),
                max_consecutive=self._policy.max_consecutive_errors,
                lease_token=self._lease_token(),
            )
            log.info(
                "monitor %s poll failed (%s); next try in %.0f s", self.monitor_id, reason, delay
            )
            self._next_poll = trio.current_time() + delay
            if updated is not None and updated.status == "error":
                log.warning(
                    "monitor %s in error after %d failed polls; next try in %.0f s",
                    self.monitor_id, failures, delay,
                )  # fmt: skip
            return False
        self._board.polled(record.finished_at.isoformat())
        self._next_poll = trio.current_time() + monitor.interval_seconds
        return True


class ActorStatusBoard:
    """What an actor last said about itself; read by the ops endpoint without a round trip."""

    def __init__(
        self, monitor_id: str, workspace_id: str, queue: trio.MemorySendChannel[Command]
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
