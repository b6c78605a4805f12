"""LISTEN on PostgreSQL: one dedicated asyncpg connection, outside the pool, kept open.

Notifications only hurry what the database already says: commands are also in their table,
read on every heartbeat; an ended session is gone from its table, and caches forget it within
their TTL anyway. So a dropped connection costs latency, never a command or a logout, and
after a reconnect one `on_notify(None)` stands for whatever was missed.

asyncpg is an asyncio driver (the only one left: every unit of work runs on the sync drivers
in worker threads), so each `listen` runs it on a trio-asyncio loop of its own, opened and
closed with it: nothing else in the process needs an asyncio loop. Its traffic is one connect,
then one `SELECT 1` every `PROBE_SECONDS`, so the loop's few timers need no care.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import trio
import trio_asyncio
from sqlalchemy.engine import URL

log = logging.getLogger(__name__)

PROBE_SECONDS = 5.0  # how often a quiet connection is checked (a dead peer sends nothing)
CONNECT_TIMEOUT = 10.0


def asyncpg_dsn(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


async def listen(url: URL, channel: str, on_notify: Callable[[str | None], None]) -> None:
    """Call `on_notify(payload)` (on the Trio thread) for every NOTIFY on `channel`, until
    cancelled.

    Reconnects with capped backoff; after every (re)connect `on_notify(None)` is called once,
    for whatever was announced while nobody listened. On cancellation the connection is
    closed (within 2 s, shielded), then the asyncio loop.
    """
    async with _asyncio_loop():
        await _listen(url, channel, on_notify)


@asynccontextmanager
async def _asyncio_loop() -> AsyncIterator[None]:
    """A trio-asyncio loop for asyncpg, with asyncio's reports logged.

    trio-asyncio's default handler re-raises whatever asyncio reports, which would end the
    loop and the LISTEN with it. But asyncio reports things nobody awaits any more, such as
    the dropped connection of a probe cancelled by its timeout ("Future exception was never
    retrieved"): those are logged, as plain asyncio does, and the LISTEN goes on.
    """
    async with trio_asyncio.open_loop() as loop:
        loop.set_exception_handler(_log_asyncio_report)
        yield


def _log_asyncio_report(_loop: object, context: dict[str, Any]) -> None:
    log.warning("asyncio: %s", context.get("message"), exc_info=context.get("exception"))


async def _listen(url: URL, channel: str, on_notify: Callable[[str | None], None]) -> None:
    """`listen`, on the trio-asyncio loop it opened."""
    token = trio.lowlevel.current_trio_token()

    def callback(_connection: Any, _pid: int, _channel: str, payload: str) -> None:
        token.run_sync_soon(on_notify, payload)

    delay = 0.5
    while True:
        try:
            connection = await trio_asyncio.aio_as_trio(asyncpg.connect)(
                asyncpg_dsn(url), timeout=CONNECT_TIMEOUT
            )
        except (OSError, asyncpg.PostgresError, TimeoutError) as err:
            log.warning("cannot LISTEN on %s yet (%s); retry in %.1f s", channel, err, delay)
            await trio.sleep(delay)
            delay = min(delay * 2, 30.0)
            continue
        try:
            await trio_asyncio.aio_as_trio(connection.add_listener)(channel, callback)
            delay = 0.5
            on_notify(None)
            while True:
                await trio.sleep(PROBE_SECONDS)
                with trio.fail_after(CONNECT_TIMEOUT):
                    await trio_asyncio.aio_as_trio(connection.fetchval)("SELECT 1")
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, trio.TooSlowError) as err:
            log.warning("LISTEN connection lost (%s); reconnecting", err)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                await trio_asyncio.aio_as_trio(connection.close)()
