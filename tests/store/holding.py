"""The two sides of a lock-order test: one transaction holds a lock as one side would hold
it midway, the other side runs in the store until PostgreSQL shows it waiting."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager

import trio
from sqlalchemy import create_engine, pool, text
from sqlalchemy.orm import Session

from store._db.urls import sync_database_url


@contextmanager
def holding(postgres_url: str) -> Iterator[Session]:
    """A transaction of its own beside the store's, as the side that holds a lock midway;
    it never waits more than 30 s for one (no test hangs)."""
    engine = create_engine(sync_database_url(postgres_url), poolclass=pool.NullPool)
    try:
        with Session(engine) as session:
            session.execute(text("SET lock_timeout = '30s'"))
            yield session
    finally:
        engine.dispose()


async def until_waiting(holding: Session, unless: Sequence[object] = ()) -> None:
    """Until the other side waits for a lock; or, taken in the wrong order, was done
    without waiting (`unless` holds its result)."""
    while not unless and not await trio.to_thread.run_sync(someone_waits_for_a_lock, holding):
        await trio.sleep(0.02)


@asynccontextmanager
async def beside(holding: Session) -> AsyncIterator[trio.Nursery]:
    """A nursery for the other side. If the body fails (or times out), `holding` lets go of
    its locks before the nursery waits for the other side, which may be waiting for them
    in a worker thread that nothing can cancel."""
    async with trio.open_nursery() as nursery:
        try:
            yield nursery
        except BaseException:
            holding.rollback()
            raise


def someone_waits_for_a_lock(beside: Session) -> bool:
    with Session(beside.get_bind()) as looking:
        waiting = looking.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        ).scalar_one()
    return int(waiting) > 0
