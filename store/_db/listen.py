"""LISTEN on PostgreSQL: one dedicated asyncpg connection, outside the pool, kept open.

Notifications only hurry what the database already says: commands are also in their table,
read on every heartbeat; an ended session is gone from its table, and caches forget it within
their TTL anyway. So a dropped connection costs latency, never a command or a logout, and
after a reconnect one `on_notify(None)` stands for whatever was missed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
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
    for whatever was announced while nobody listened.
    """
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
