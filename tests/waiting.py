"""Waiting in tests: on a condition, never for a fixed time.

A test that needs something to have happened (a task connected, a lease lapsed, a poll
finished) waits for that, under a generous deadline: a busy machine is slow, and a fixed sleep
is either too short there or wasted everywhere else. In-process Trio tasks are waited for
with `trio.testing.wait_all_tasks_blocked()`; anything else (a database row, another process,
a server's log) is polled with `eventually`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

import trio


async def eventually(
    predicate: Callable[[], bool | Awaitable[bool]],
    *,
    within: float = 30.0,
    every: float = 0.05,
    what: str | None = None,
) -> None:
    """Return once `predicate()` (awaited if it returns an awaitable) is true, checked
    every `every` seconds; an `AssertionError` naming `what` after `within` seconds.
    Cancellation propagates."""
    with trio.move_on_after(within):
        while True:
            value = predicate()
            if await value if inspect.isawaitable(value) else value:
                return
            await trio.sleep(every)
    raise AssertionError(f"not within {within} s: {what or _name(predicate)}")


def _name(predicate: Callable[..., object]) -> str:
    name = getattr(predicate, "__qualname__", None) or repr(predicate)
    return "a condition" if name.endswith("<lambda>") else name
