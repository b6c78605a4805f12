"""Housekeeping: every few hours, what nothing will read again is deleted.

- Expired sessions, and e-mailed links (password resets, confirmations, trial links) a week
  past their expiry (`store/accounts/expiry.py`).
- Rows of the alerts' delivery log older than `DELIVERY_LOG_KEPT` (90 days,
  `store/notify/retention.py`), the oldest first, a few thousand per transaction.
- Versions of listings' descriptions that no monitor holds. A poll drops the versions its
  monitor moved on from right after it is recorded, in a transaction of its own; if that
  one fails (the database went away between the two), they would stay for good. The sweep
  walks the table a few thousand ids at a time, one short transaction each, so polls and
  pages never wait long behind it.

Every node of a cluster runs it: the deletes are idempotent, and a node's sweep costs a
walk of an index. A database that does not answer costs one round, not the actor.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

import trio

from store import DELIVERY_LOG_KEPT, DatabaseUnavailable, Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JanitorSettings:
    interval_seconds: float = 6 * 3600.0
    # After the start: the engine's own work (resuming monitors and runs) goes first.
    first_after_seconds: float = 300.0


class JanitorBoard:
    """What the janitor last did, for the operators' status endpoint."""

    def __init__(self) -> None:
        self.rounds = 0
        self.restarts = 0
        self.last_round_at: datetime | None = None
        self.last_removed: dict[str, int] = {}
        self.last_error: str | None = None

    def restarted(self, error: str) -> None:
        self.restarts += 1
        self.last_error = error

    def snapshot(self) -> dict[str, object]:
        at = self.last_round_at
        return {
            "rounds": self.rounds,
            "last_round_at": at.isoformat() if at is not None else None,
            "last_removed": dict(self.last_removed),
            "restarts": self.restarts,
            "last_error": self.last_error,
        }


class Janitor:
    def __init__(self, store: Store, settings: JanitorSettings) -> None:
        self._store = store
        self._settings = settings
        self.board = JanitorBoard()

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """A round every `interval_seconds`, the first `first_after_seconds` after the start;
        until cancelled."""
        task_status.started()
        await trio.sleep(self._settings.first_after_seconds)
        while True:
            try:
                tidied = await self.tidy()
            except DatabaseUnavailable as err:
                self.board.last_error = f"database unavailable: {err}"
                log.warning("housekeeping skipped this round: database unavailable (%s)", err)
            else:
                deleted = ", ".join(f"{n} {kind}" for kind, n in tidied.items() if n)
                log.info("housekeeping deleted %s", deleted or "nothing")
            await trio.sleep(self._settings.interval_seconds)

    async def tidy(self) -> dict[str, int]:
        """One round: expired sessions and links, the sweep of unheld versions, then the
        delivery log's old rows; how many of each kind went."""
        removed = await self._store.delete_expired()
        removed["unheld_descriptions"] = await self._sweep()
        removed["old_deliveries"] = await self._drop_old_deliveries()
        self.board.rounds += 1
        self.board.last_round_at = self._store.clock()
        self.board.last_removed = removed
        self.board.last_error = None
        return removed

    async def _drop_old_deliveries(self) -> int:
        before = self._store.clock() - DELIVERY_LOG_KEPT
        return await _walk(lambda after: self._store.notify.drop_old_deliveries(before, after))

    async def _sweep(self) -> int:
        return await _walk(self._store.market.sweep_unheld_versions)


async def _walk(step: Callable[[int], Awaitable[tuple[int, int] | None]]) -> int:
    """Steps over a table by id, each its own transaction, each from the last one's end
    (`step(after)`: the last id it looked at and how many rows went, or None past the end);
    how many went in all."""
    after, dropped = 0, 0
    while (done := await step(after)) is not None:
        after, gone = done
        dropped += gone
    return dropped
