"""One-for-one supervision: an actor that fails is restarted alone, with capped backoff.

The policy, said out loud: `Exception` from an actor is logged, counted on its status board
and the actor restarted after `min(cap, base * 2**n)` seconds (n = restarts in a row, reset
once the actor has run for `healthy_after` seconds). `MonitorStopped` ends supervision.
`trio.Cancelled` (and every other `BaseException`) is never caught: it propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import trio

from ._actor import MonitorStopped

log = logging.getLogger(__name__)


class RestartBoard(Protocol):
    """Where a supervised actor's restarts are told (its status board)."""

    def restarted(self, error: str) -> None: ...


@dataclass(frozen=True)
class RestartPolicy:
    base_seconds: float = 1.0
    cap_seconds: float = 60.0
    healthy_after: float = 60.0


async def supervise(
    name: str,
    run_actor: Callable[[], Awaitable[None]],
    board: RestartBoard,
    policy: RestartPolicy,
) -> None:
    """Run `run_actor` until it stops on purpose; restart it when it fails."""
    in_a_row = 0
    while True:
        started = trio.current_time()
        try:
            await run_actor()
            return
        except MonitorStopped:
            return
        except Exception as err:
            if trio.current_time() - started >= policy.healthy_after:
                in_a_row = 0
            delay = min(policy.cap_seconds, policy.base_seconds * 2**in_a_row)
            in_a_row += 1
            board.restarted(f"{type(err).__name__}: {err}"[:500])
            log.exception("actor %s crashed; restart in %.1f s", name, delay)
            await trio.sleep(delay)
