"""One-for-one supervision: an actor that fails is restarted alone, with capped backoff.

The policy, said out loud: `Exception` from an actor is logged, counted on its status board
and the actor restarted after `min(cap, base * 2**n)` seconds (n = restarts in a row, reset
once the actor has run for `healthy_after` seconds). `ActorStopped` (the actor's own "I am
done on purpose", e.g. a monitor whose row was deleted) ends supervision, as does returning.
`trio.Cancelled` (and every other `BaseException`) is never caught: it propagates.

It knows no kind of actor: monitors, the notification dispatcher and anything else the
engine owns are supervised by the same function.

Supervision is started with `nursery.start`: the actor is handed a `task_status` and says
when it is ready; a restart before that keeps the starter waiting, and supervision that ends
before it (the actor stopped at once) releases the starter all the same.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Protocol

import trio

log = logging.getLogger(__name__)


class ActorStopped(Exception):
    """Raised by a supervised actor to end its supervision on purpose (not a failure)."""


class RestartBoard(Protocol):
    """Where a supervised actor's restarts are told (its status board)."""

    def restarted(self, error: str) -> None: ...


class Startable(Protocol):
    """An actor's `run`: reports readiness through `task_status`, as `nursery.start` wants."""

    def __call__(self, *, task_status: trio.TaskStatus[None]) -> Awaitable[None]: ...


@dataclass(frozen=True)
class RestartPolicy:
    base_seconds: float = 1.0
    cap_seconds: float = 60.0
    healthy_after: float = 60.0


class _Readiness:
    """Passes the first `started()` on to the starter; later runs' are no-ops."""

    def __init__(self, task_status: trio.TaskStatus[None]) -> None:
        self._task_status = task_status
        self.told = False

    def started(self, value: None = None) -> None:
        if not self.told:
            self.told = True
            self._task_status.started()


async def supervise(
    name: str,
    run_actor: Startable,
    board: RestartBoard,
    policy: RestartPolicy,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run `run_actor` until it stops on purpose; restart it when it fails. `task_status` is
    told once the actor is first ready (or has stopped)."""
    readiness = _Readiness(task_status)
    in_a_row = 0
    while True:
        started = trio.current_time()
        try:
            await run_actor(task_status=readiness)
            break
        except ActorStopped:
            break
        except Exception as err:
            if trio.current_time() - started >= policy.healthy_after:
                in_a_row = 0
            delay = min(policy.cap_seconds, policy.base_seconds * 2**in_a_row)
            in_a_row += 1
            board.restarted(f"{type(err).__name__}: {err}"[:500])
            log.exception("actor %s crashed; restart in %.1f s", name, delay)
            await trio.sleep(delay)
    readiness.started()  # stopped before it was ever ready: the starter must not hang
