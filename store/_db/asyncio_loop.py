"""The trio-asyncio loop (LISTEN on PostgreSQL runs on asyncpg), and its cancelled timers
forgotten at once instead of kept until they would have fired.

SQLAlchemy's connection pool waits for a connection under `asyncio.timeout(pool_timeout)`
(30 s), so every transaction schedules a timer and cancels it a few milliseconds later.
asyncio's own loop drops cancelled timers from its heap once they are half of it;
trio-asyncio (0.16) never does: each stays in the heap for its full 30 s. A cancelled
handle still holds the `contextvars.Context` it was scheduled in, and with it the whole
request that ran the transaction (Quart's request context, the request, Hypercorn's
stream). At 100 requests/s that kept ~3,000 dead requests alive, and each full garbage
collection walked them: pauses grew to 150-200 ms, straight into the listings p99.

`forget_cancelled_timers` gives a loop asyncio's behaviour. It relies on two private details
of trio-asyncio's loop (the `_timers` heap, and the `_timer_handle_cancelled` hook that
`TimerHandle.cancel` calls); if a release changes them it logs once and does nothing, and
`tests/store/test_asyncio_loop.py` fails, so the change is noticed rather than silently leaky.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio_asyncio

log = logging.getLogger(__name__)

# Purge once this many timers were cancelled and they are at least half the heap: a purge
# is one pass over the heap, so its cost is spread over at least as many cancellations.
PURGE_AFTER = 64


def forget_cancelled_timers(loop: asyncio.AbstractEventLoop) -> bool:
    """Make `loop` drop cancelled timers from its heap; False (and a warning) when this
    loop does not have the internals this relies on."""
    timers = getattr(loop, "_timers", None)
    if not isinstance(timers, list) or not hasattr(loop, "_timer_handle_cancelled"):
        log.warning("cannot purge cancelled timers of %s: they stay until due", type(loop))
        return False
    cancelled = 0

    def timer_handle_cancelled(_handle: asyncio.TimerHandle) -> None:
        nonlocal cancelled
        cancelled += 1
        if cancelled >= PURGE_AFTER and 2 * cancelled >= len(timers):
            # In place: the loop holds this very list.
            timers[:] = [timer for timer in timers if not timer.cancelled()]
            heapq.heapify(timers)
            cancelled = 0

    # An instance attribute shadows the loop's no-op method: `TimerHandle.cancel()` calls
    # `loop._timer_handle_cancelled(handle)`.
    loop._timer_handle_cancelled = timer_handle_cancelled  # type: ignore[attr-defined]
    return True


@asynccontextmanager
async def asyncio_loop() -> AsyncIterator[None]:
    """The trio-asyncio loop the database drivers run on, with asyncio's reports logged.

    trio-asyncio's default handler re-raises whatever asyncio reports, which ends the loop
    and with it the node. But asyncio reports things nobody awaits any more, such as the
    dropped connection of a query cancelled by a timeout ("Future exception was never
    retrieved"): those are logged, as plain asyncio does, and the node goes on. Cancelled
    timers are dropped at once, as plain asyncio does too (`forget_cancelled_timers`).
    """
    async with trio_asyncio.open_loop() as loop:
        loop.set_exception_handler(_log_asyncio_report)
        forget_cancelled_timers(loop)
        yield


def _log_asyncio_report(_loop: object, context: dict[str, Any]) -> None:
    log.warning("asyncio: %s", context.get("message"), exc_info=context.get("exception"))
