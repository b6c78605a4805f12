"""A monitor actor: owns one monitor's command channel and schedule, polls politely.

It runs until `Stop`, cancellation, or (cluster mode) a write refused because another node
claimed the monitor (`LeaseLost`: the actor ends, it is not restarted). Poll failures are
recorded on the monitor and backed off (they never end the actor); after
`max_consecutive_errors` of its own (an unclassified failure, a URL the marketplace cannot
read) the monitor goes to `error`, where it keeps trying every `error_retry_seconds` and
returns to `active` by itself at the first poll that succeeds; `Resume` tries at once. The
marketplace's failures (an outage, a block, a 429, no session) never park it in `error`: it
stays `active` and tries again within three intervals, at most five minutes.
Anything else that goes wrong (a database outage, a bug) escapes to the supervisor, which
restarts it.

The actor is the only writer of its monitor's status: its polls, and the `Pause` and `Resume`
it is sent, which it carries out between polls and answers through the envelope's `Reply`.
A queued command goes before a poll falling due, and wins over the wait for a poll slot, so
a command waits at most for the poll in flight.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import trio

from store import DatabaseUnavailable, LeaseLost, MonitorRecord, PollFailure, Store

from .._commands import Pause, PollNow, Resume, Stop
from .._supervisor import ActorStopped
from ..market import Marketplace, SuspectedBlock
from ..notifications import decide_error_alerts
from ._commands import Envelope
from ._poll import SHARE_OF_INTERVAL, ConfirmPolicy, poll_once
from ._schedule import next_tick, seconds_until
from ._status_board import ActorStatusBoard

log = logging.getLogger(__name__)

# The failure kind of a poll that found no marketplace session (`Marketplace.failure_kind`).
NO_SESSION = "no_session"
# A failed poll's reason when the fault is ours (the details are in the log).
INTERNAL_FAILURE = "the check failed on our side (logged for the operators); it is tried again"
# The marketplace's failures, not the monitor's: they never park a monitor in `error` (whose
# retry is hourly), and the next try comes within `MARKETPLACE_RETRY_CAP` (three intervals,
# at most five minutes), so a marketplace that answers again is polled again at once. The
# client's own windows (Retry-After, block cool-down, breaker) keep those tries from
# reaching a marketplace that asked for quiet: they fail without a request.
MARKETPLACE_KINDS = frozenset(
    {"unavailable", "rate_limited", "blocked", "suspected_block", "filters_ignored",
     "profile_moved", NO_SESSION}
)  # fmt: skip
MARKETPLACE_RETRY_CAP = 300.0


@dataclass(frozen=True)
class MonitorPolicy:
    max_consecutive_errors: int = 5
    max_backoff_seconds: float = 1800.0
    error_retry_seconds: float = 3600.0  # how often a monitor in `error` tries again
    poll_timeout_seconds: float = 300.0
    confirm: ConfirmPolicy = field(default_factory=ConfirmPolicy)


class MonitorStopped(ActorStopped):
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
        commands: trio.MemoryReceiveChannel[Envelope],
        policy: MonitorPolicy,
        status: ActorStatusBoard,
        poll_slots: trio.CapacityLimiter,
        lease_token: Callable[[], int | None] = lambda: None,
        after_poll: Callable[[MonitorRecord], Awaitable[object]] | None = None,
        initial: MonitorRecord | None = None,
    ) -> None:
        """`after_poll(monitor)` runs after each successful poll, outside the poll's slot
        (the niche alerts' analysis); it must not raise but for cancellation. `initial`, the
        monitor as just read, lets the first run be ready without a round trip (a restart
        reads it afresh)."""
        self.monitor_id = monitor_id
        self._store = store
        self._market = market
        self._commands = commands
        self._policy = policy
        self._board = status
        self._poll_slots = poll_slots
        self._lease_token = lease_token
        self._after_poll = after_poll
        self._initial = initial
        self._next_poll = 0.0  # trio time; 0 means "now"
        # A poll someone asked for (poll now, resume) reads the market afresh, never another
        # monitor's recent answer; a scheduled one may share it (`_reuse_window`).
        self._asked = False
        self._tick_due: float | None = None  # trio time of the grid tick a poll waits for

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Take commands and poll until stopped; `task_status.started()` once scheduled and
        listening (a command sent from then on is taken in order)."""
        try:
            await self._run(task_status)
        except LeaseLost as err:
            log.info("monitor %s: %s; this node stops running it", self.monitor_id, err)
            raise MonitorStopped(self.monitor_id) from err

    async def _run(self, task_status: trio.TaskStatus[None]) -> None:
        monitor = self._initial or await self._load()
        self._initial = None  # a restart reads the monitor afresh
        self._schedule_from(monitor)
        self._show(monitor)
        task_status.started()
        while True:
            monitor = await self._load()
            polling = self._show(monitor)
            envelope = await self._next_command(self._next_poll if polling else math.inf)
            if envelope is None:  # a poll is due
                envelope = await self._poll_unless_commanded(monitor)
            # Handled outside the deadline's scope, so a poll falling due cannot cut it short.
            if envelope is not None:
                await self._handle(envelope)

    def _show(self, monitor: MonitorRecord) -> bool:
        """Put the monitor on the board; whether it wants polls."""
        polling = self.wants_polls(monitor)
        self._board.update(monitor, "idle" if polling else monitor.status)
        return polling

    async def _next_command(self, deadline: float) -> Envelope | None:
        """The next command, or None once `deadline` passes without one. A command already
        queued is taken first, even when a poll is overdue."""
        try:
            return self._commands.receive_nowait()
        except trio.WouldBlock:
            pass
        except trio.EndOfChannel:
            raise MonitorStopped(self.monitor_id) from None
        with trio.move_on_at(deadline):
            try:
                return await self._commands.receive()
            except trio.EndOfChannel:
                raise MonitorStopped(self.monitor_id) from None
        return None

    async def _poll_unless_commanded(self, monitor: MonitorRecord) -> Envelope | None:
        """Wait for a poll slot and poll; a command that arrives before the slot is returned
        instead (no poll: the loop reconsiders, the poll being still due if it wants one)."""
        arrived = await self._slot_or_command()
        if arrived is not None:
            return arrived
        try:
            polled = await self._poll_now(monitor)
        finally:
            self._poll_slots.release_on_behalf_of(self)
        if polled and self._after_poll is not None:
            await self._after_poll(monitor)
        return None

    async def _slot_or_command(self) -> Envelope | None:
        """None once holding a poll slot (on behalf of `self`), or the command that came
        first (then no slot is held); the end of the channel stops the actor."""
        # Polls queue here, cheaply, rather than for database connections (whose pool would
        # time out under a thousand monitors); the wait shows as schedule lag.
        try:
            self._poll_slots.acquire_on_behalf_of_nowait(self)
            return None
        except trio.WouldBlock:
            pass
        held = False
        arrived: list[Envelope | None] = []  # None: the channel ended

        async def slot(race: trio.CancelScope) -> None:
            nonlocal held
            await self._poll_slots.acquire_on_behalf_of(self)
            held = True
            race.cancel()

        async def command(race: trio.CancelScope) -> None:
            try:
                arrived.append(await self._commands.receive())
            except trio.EndOfChannel:
                arrived.append(None)
            race.cancel()

        async with trio.open_nursery() as race:
            race.start_soon(slot, race.cancel_scope)
            race.start_soon(command, race.cancel_scope)
        if not arrived:
            return None
        if held:  # both in the same instant: the command goes first, the slot back
            self._poll_slots.release_on_behalf_of(self)
        if arrived[0] is None:
            raise MonitorStopped(self.monitor_id)
        return arrived[0]

    async def _load(self) -> MonitorRecord:
        monitor = await self._store.monitors.get(self.monitor_id, None)
        if monitor is None:
            raise MonitorStopped(self.monitor_id)
        return monitor

    @staticmethod
    def wants_polls(monitor: MonitorRecord) -> bool:
        """Active, in error, or still bootstrapping: an actor runs for it (and polls)."""
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

    async def _handle(self, envelope: Envelope) -> None:
        """Carry out one command and settle its reply. A command whose sender stopped waiting
        (withdrawn, or past its deadline) is skipped: it must not take effect after its sender
        was told it did not."""
        reply = envelope.reply
        expired = trio.current_time() >= envelope.deadline
        if expired or (reply is not None and not reply.take()):
            if reply is not None:
                reply.dropped()  # a no-op once withdrawn
            log.info("monitor %s: %r no longer wanted; skipped", self.monitor_id, envelope.command)
            return
        try:
            await self._execute(envelope)
        except Exception as err:
            if reply is not None:
                reply.failed(err)
            raise
        except BaseException:
            if reply is not None:
                reply.dropped()  # cancelled mid-write: the unit rolled back, nothing changed
            raise
        if reply is not None:
            reply.done()

    async def _execute(self, envelope: Envelope) -> None:
        match envelope.command:
            case PollNow():
                self._next_poll, self._asked = trio.current_time(), True
            case Pause():
                await self._store.monitors.set_status(self.monitor_id, "paused")
            case Resume():
                await self._store.monitors.set_status(self.monitor_id, "active", reset_errors=True)
                self._next_poll, self._asked = trio.current_time(), True
            case Stop():
                raise MonitorStopped(self.monitor_id)

    async def _poll_now(self, monitor: MonitorRecord) -> bool:
        """One poll, its failure recorded and backed off; True when it succeeded."""
        self._board.update(monitor, "polling")
        started = self._store.clock()
        fresh = self._reuse_window(monitor)
        try:
            with trio.fail_after(self._policy.poll_timeout_seconds):
                record = await poll_once(
                    self._store,
                    self._market,
                    monitor,
                    now=started,
                    lease_token=self._lease_token(),
                    policy=self._policy.confirm,
                    fresh_within=fresh,
                )
        except LeaseLost:
            raise
        except Exception as err:
            kind: str | None
            if isinstance(err, trio.TooSlowError):
                reason = f"poll timed out after {self._policy.poll_timeout_seconds:.0f} s"
                kind = "unavailable"
            else:
                kind = (
                    SuspectedBlock.kind
                    if isinstance(err, SuspectedBlock)
                    else self._market.failure_kind(err)
                )
                reason = self._failure_reason(err, kind)
            failures = monitor.consecutive_errors + 1
            delay = self._retry_in(monitor, failures, kind)
            updated = await self._store.monitors.record_poll_error(
                self.monitor_id,
                PollFailure(
                    started_at=started,
                    error=reason,
                    kind=kind,
                    next_poll_at=self._store.clock() + timedelta(seconds=delay),
                    max_consecutive=self._policy.max_consecutive_errors,
                    keeps_active=kind in MARKETPLACE_KINDS,
                ),
                decide=decide_error_alerts,
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
        self._schedule_tick(monitor, record.finished_at)
        return True

    def _schedule_tick(self, monitor: MonitorRecord, finished_at: datetime) -> None:
        """The next poll on the search's grid (`_schedule`), as the poll stored it."""
        due = next_tick(finished_at, monitor.interval_seconds, monitor.url, monitor.id)
        self._next_poll = trio.current_time() + seconds_until(due, self._store.clock())
        self._tick_due = self._next_poll

    def _reuse_window(self, monitor: MonitorRecord) -> float:
        """How old a fetch of its search this poll may take from another monitor (seconds):
        none when someone asked for the poll; else `SHARE_OF_INTERVAL` of its interval, and
        on its search's grid as much more as the poll runs late (a busy node), so the
        monitors of one tick read the fetch made at it however late each gets to its poll
        (never the tick before's: lateness counts up to one interval)."""
        asked, due = self._asked, self._tick_due
        self._asked, self._tick_due = False, None
        if asked:
            return 0.0
        window = SHARE_OF_INTERVAL * monitor.interval_seconds
        if due is not None:
            window += min(max(0.0, trio.current_time() - due), monitor.interval_seconds)
        return window

    def _failure_reason(self, err: Exception, kind: str | None) -> str:
        """What the monitor shows of a failed poll (and its error alert says): the
        marketplace's failures and a database outage in their own words. Anything else is
        a fault of ours whose text (a driver's SQL and parameters, an internal name) means
        nothing to the reseller and is not theirs to read: it goes to the log instead."""
        if kind is not None or isinstance(err, DatabaseUnavailable):
            return f"{type(err).__name__}: {err}"[:500]
        log.error("monitor %s poll failed on our side", self.monitor_id, exc_info=err)
        return INTERNAL_FAILURE

    def _retry_in(self, monitor: MonitorRecord, failures: int, kind: str | None) -> float:
        """Seconds until the next try after a failed poll of `kind`, the `failures`-th in a
        row (see `MARKETPLACE_KINDS`)."""
        interval = float(monitor.interval_seconds)
        if kind == NO_SESSION:
            return interval  # a session supplied meanwhile is used within one interval
        backoff = error_backoff(interval, failures, self._policy.max_backoff_seconds)
        if kind in MARKETPLACE_KINDS:
            return min(backoff, max(interval, min(3 * interval, MARKETPLACE_RETRY_CAP)))
        if failures >= self._policy.max_consecutive_errors:
            return self._policy.error_retry_seconds  # in `error` from now on: the long retry
        return backoff
