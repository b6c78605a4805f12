"""`Unit.glance`: a short read outside any transaction. On SQLite it runs on the Trio thread,
on a connection of its own, unless SQLite would make it wait for a lock; on PostgreSQL it
runs in a worker thread in autocommit (as `Unit.read` does), and the pool's connections go
back to transactions for units."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import trio
import trio_asyncio
from sqlalchemy import Connection, select, text, update
from sqlalchemy.orm import Session

from store import Store, open_store
from store._db.read_only import WriteInARead, check_reads_for_writes
from store._db.read_only import _writes as _writes_sql
from store._db.unit import POSTGRES_LANES
from store.monitors.models import Monitor as MonitorRow
from tests.store.test_store_monitors import _monitor
from tests.store.test_unit_cancellation import _checked_out, _until


def _read_label(monitor_id: str, seen_on: list[int]) -> Any:
    def work(connection: Connection) -> str | None:
        seen_on.append(threading.get_ident())
        found = connection.execute(
            text("SELECT label FROM monitors WHERE id = :id"), {"id": monitor_id}
        ).scalar_one()
        return str(found) if found is not None else None

    return work


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_glance_on_sqlite_reads_on_the_trio_thread(store: Store) -> None:
    monitor_id, _ = await _monitor(store)
    await store.unit(lambda db: db.execute(text("UPDATE monitors SET label = 'shoes'")))
    seen_on: list[int] = []

    assert await store.glance(_read_label(monitor_id, seen_on)) == "shoes"
    assert seen_on == [threading.get_ident()]
    assert _checked_out(store) == 0  # nothing of the pool was taken


@contextmanager
def _held_exclusively(store: Store) -> Iterator[sqlite3.Connection]:
    """Another process's connection that holds the whole database (SQLite's exclusive locking
    mode, taken by a write): in WAL mode, readers too must wait for it. It can be taken only
    while no other connection is open: the store's idle ones are closed first."""
    store._engine.dispose()  # type: ignore[attr-defined]
    store._glances.dispose()  # type: ignore[attr-defined]
    holder = sqlite3.connect(str(store.url.database), isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("UPDATE monitors SET label = 'held'")
        holder.execute("COMMIT")  # the lock stays until the connection closes
        yield holder
    finally:
        holder.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_glance_sqlite_would_make_wait_waits_in_a_worker_thread(store: Store) -> None:
    monitor_id, _ = await _monitor(store)
    seen_on: list[int] = []
    found: list[str | None] = []

    async def glance() -> None:
        found.append(await store.glance(_read_label(monitor_id, seen_on)))

    with _held_exclusively(store) as holder:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(glance)
            # The Trio thread is free while the glance waits: it waits in a worker thread,
            # on one of the pool's connections, for the lock.
            with trio.fail_after(60):
                while _checked_out(store) == 0:
                    await trio.sleep(0.01)
            assert found == []
            holder.close()
    assert found == ["held"]
    assert seen_on and seen_on[-1] != threading.get_ident()
    # The Trio thread's own connection is not spoilt: the next glance reads here again.
    seen_on.clear()
    assert await store.glance(_read_label(monitor_id, seen_on)) == "held"
    assert seen_on == [threading.get_ident()]


async def test_glancing_in_a_loop_lets_the_other_tasks_run(store: Store) -> None:
    other_ran = trio.Event()
    glances = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: _set(other_ran))
        while not other_ran.is_set() and glances < 100:
            await store.glance(lambda connection: connection.execute(text("SELECT 1")))
            glances += 1
    assert other_ran.is_set() and glances < 100


async def _set(event: trio.Event) -> None:
    event.set()


async def test_a_cancelled_caller_glances_at_nothing(store: Store) -> None:
    ran: list[int] = []
    with trio.CancelScope() as scope:
        scope.cancel()
        await store.glance(lambda connection: ran.append(1))
    assert scope.cancelled_caught and ran == []


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_glances_and_reads_on_postgresql_are_autocommit_and_units_stay_transactions(
    store: Store,
) -> None:
    """Every lane at once, so that every pooled connection serves a glance, then a unit."""
    from psycopg.pq import TransactionStatus

    lanes = POSTGRES_LANES.connections
    statuses: list[TransactionStatus] = []
    entered = [threading.Event() for _ in range(lanes)]
    release = threading.Event()

    def status_after_a_select(lane: int, db: Connection | Session) -> None:
        connection = db.connection() if isinstance(db, Session) else db
        connection.execute(text("SELECT 1"))
        dbapi = connection.connection.dbapi_connection
        assert dbapi is not None
        statuses.append(dbapi.info.transaction_status)
        entered[lane].set()
        release.wait(60)

    async def all_lanes(call: Any) -> None:
        release.clear()
        for event in entered:
            event.clear()
        async with trio.open_nursery() as nursery:
            try:
                for lane in range(lanes):
                    nursery.start_soon(call, lambda db, lane=lane: status_after_a_select(lane, db))
                for event in entered:
                    await _until(event)
                assert _checked_out(store) == lanes
            finally:
                release.set()

    await all_lanes(store.glance)
    assert statuses == [TransactionStatus.IDLE] * lanes  # no transaction left open
    statuses.clear()
    await all_lanes(store.read)
    assert statuses == [TransactionStatus.IDLE] * lanes
    statuses.clear()
    await all_lanes(store.unit)
    assert statuses == [TransactionStatus.INTRANS] * lanes


def _writes() -> list[tuple[str, Callable[[Connection | Session], object]]]:
    """Writes of every shape a read could slip in: SQLAlchemy's own statements, an ORM flush,
    text, SQL handed to the driver as it is, a write behind a comment or inside a CTE."""

    def orm_flush(db: Connection | Session) -> object:
        assert isinstance(db, Session)
        monitor = db.scalars(select(MonitorRow).limit(1)).one()
        monitor.label = "written"
        db.flush()
        return None

    def driver_sql(db: Connection | Session) -> object:
        connection = db.connection() if isinstance(db, Session) else db
        return connection.exec_driver_sql("UPDATE monitors SET label = 'written'")

    return [
        ("core", lambda db: db.execute(update(MonitorRow).values(label="written"))),
        ("text", lambda db: db.execute(text("  update monitors SET label = 'written'"))),
        ("orm", orm_flush),
        ("driver", driver_sql),
        ("comment", lambda db: db.execute(text("/* x */ UPDATE monitors SET label = 'written'"))),
        (
            "cte",
            lambda db: db.execute(
                text("WITH x AS (SELECT 1) UPDATE monitors SET label = 'written'")
            ),
        ),
        (
            "returning",
            lambda db: db.execute(
                text("UPDATE monitors SET label = 'written' RETURNING id").columns()
            ),
        ),
    ]


@pytest.mark.parametrize("shape", [shape for shape, _ in _writes()])
async def test_a_read_or_a_glance_that_writes_is_refused_and_writes_nothing(
    store: Store, shape: str
) -> None:
    """Outside a transaction a write would commit at once, whatever the read did next."""
    monitor_id, _ = await _monitor(store)
    await store.unit(lambda db: db.execute(text("UPDATE monitors SET label = 'kept'")))
    write = dict(_writes())[shape]
    callers = [store.read] if shape == "orm" else [store.read, store.glance]
    for call in callers:
        with pytest.raises(WriteInARead):
            await call(write)
    assert await store.glance(_read_label(monitor_id, [])) == "kept"
    # Units still write: the guard is the read engine's alone.
    await store.unit(dict(_writes())["core"])
    assert await store.glance(_read_label(monitor_id, [])) == "written"


def test_reads_are_not_taken_for_writes() -> None:
    for sql in (
        "SELECT label FROM monitors WHERE label = 'UPDATE x SET y'",
        "SELECT updated_at, inserted, deleted FROM listings -- DELETE FROM listings",
        "WITH RECURSIVE marks(n) AS (SELECT 1) SELECT n FROM marks",
    ):
        assert not _writes_sql(sql), sql
    assert _writes_sql("INSERT OR IGNORE INTO monitors (id) VALUES ('m')")
    assert _writes_sql("TRUNCATE notification_deliveries")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_itself_refuses_a_glance_a_write_the_guard_cannot_read(
    store: Store,
) -> None:
    """A write that is no DML statement (a pragma that writes the file's header) passes the
    statement check; on SQLite the glance's connection is `query_only`, so the database
    refuses it."""
    with pytest.raises(WriteInARead):
        await store.glance(lambda connection: connection.exec_driver_sql("PRAGMA user_version = 7"))
    version = await store.unit(lambda db: db.execute(text("PRAGMA user_version")).scalar_one())
    assert version != 7


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_without_the_check_sqlite_still_refuses_a_glance_that_writes(
    database_url: str,
) -> None:
    """As in a service, where the statement check is off (its cost): the glance's
    connection is `query_only` all the same."""
    check_reads_for_writes(False)
    try:
        async with trio_asyncio.open_loop(), open_store(database_url) as unchecked:
            with pytest.raises(WriteInARead):
                await unchecked.glance(
                    lambda connection: connection.execute(text("UPDATE monitors SET label = 'x'"))
                )
    finally:
        check_reads_for_writes(True)
