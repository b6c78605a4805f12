"""The runtime's asyncio loop forgets cancelled timers (store/_db/asyncio_loop.py).

What it guards against: SQLAlchemy's pool takes a connection under `asyncio.timeout(30)` on
every transaction; with trio-asyncio's loop keeping each cancelled timer for 30 s, and each
timer keeping the context of the request that scheduled it, a busy node held thousands of
finished requests in memory and paid for them in garbage-collection pauses.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref

import trio
import trio_asyncio

from store import asyncio_loop
from store._db.asyncio_loop import PURGE_AFTER

TRANSACTIONS = 1_000
REQUEST: contextvars.ContextVar[object] = contextvars.ContextVar("request")


class Request:
    """Stands for a request's state, reachable only through the context it ran in."""


async def _transaction(requests: list[weakref.ref[Request]]) -> None:
    """A request's unit of work as the pool sees it: the request's state is in the context
    when the pool waits under a 30 s timeout, which is cancelled at once."""
    request = Request()
    requests.append(weakref.ref(request))
    REQUEST.set(request)
    async with asyncio.timeout(30):
        await asyncio.sleep(0)


async def test_cancelled_timers_and_their_requests_are_not_kept() -> None:
    fired = trio.Event()
    requests: list[weakref.ref[Request]] = []
    async with asyncio_loop():
        loop = trio_asyncio.current_loop.get()
        # A live timer scheduled before the churn must survive every purge.
        loop.call_later(0.2, fired.set)
        for _ in range(TRANSACTIONS):
            await trio_asyncio.aio_as_trio(_transaction)(requests)
        timers_left = len(loop._timers)
        gc.collect()
        alive = sum(ref() is not None for ref in requests)
        with trio.fail_after(30):
            await fired.wait()
    # Without the purge every one of the 1,000 timers (and its request) would still be there.
    assert timers_left <= PURGE_AFTER + 1, timers_left
    assert alive <= PURGE_AFTER, alive
