"""Readiness probes of the database, one at a time: a `/health` request that arrives while a
probe runs shares its answer instead of starting another.

`/health` needs no credentials, so anyone can ask it as often as they like, and every probe
is a round trip to the database in one of the lanes the listings pages and the dashboard
read in (`store/_db/unit.py`). Shared, a flood of health checks costs at most one probe in
flight, and each answer still comes from a probe that ran while its request waited: no
answer is older than the request that gets it (a load balancer sees an outage at once).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio

from store import DatabaseUnavailable

Ping = Callable[[], Awaitable[None]]


@dataclass
class _Probe:
    done: trio.Event = field(default_factory=trio.Event)
    ready: bool | None = None  # None: the probing request was cancelled before an answer


class Readiness:
    """Whether the database answers, probed by `ping` within `timeout` seconds."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._running: _Probe | None = None

    async def ready(self, ping: Ping) -> bool:
        while (running := self._running) is not None:
            await running.done.wait()
            if running.ready is not None:
                return running.ready
            # The request probing was cancelled (its client left): probe again, or share
            # the probe another waiter started meanwhile.
        probe = self._running = _Probe()
        try:
            probe.ready = await self._probe(ping)
            return probe.ready
        finally:
            self._running = None
            probe.done.set()

    async def _probe(self, ping: Ping) -> bool:
        try:
            # A database that hangs is as unready as one that refuses.
            with trio.fail_after(self._timeout):
                await ping()
        except (DatabaseUnavailable, trio.TooSlowError):
            return False
        return True
