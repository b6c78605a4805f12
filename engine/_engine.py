"""The Engine: owner of every long-lived actor (monitors, runs) and their nursery.

For now it owns an empty nursery; monitors and runs (their own issues) attach here so that
their lifetime is bounded by the Engine's `async with` block.
"""

from __future__ import annotations

from types import TracebackType

import trio

from store import Store


class Engine:
    """An async context manager: entering opens the nursery, leaving cancels what is left."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._nursery_manager = trio.open_nursery()
        self._nursery: trio.Nursery | None = None

    @property
    def nursery(self) -> trio.Nursery:
        if self._nursery is None:
            raise RuntimeError("Engine used outside its `async with` block")
        return self._nursery

    async def __aenter__(self) -> Engine:
        self._nursery = await self._nursery_manager.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        # Leaving the block means the service is stopping: actors are cancelled, then awaited.
        self.nursery.cancel_scope.cancel()
        try:
            return await self._nursery_manager.__aexit__(exc_type, exc, tb)
        finally:
            self._nursery = None
