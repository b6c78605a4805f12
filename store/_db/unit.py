"""The unit of work, the only way anything reaches the database (`Store` is built on it).

Each unit of work is one transaction on SQLAlchemy's sync engine (sqlite3, psycopg 3), run in
a worker thread by `trio.to_thread.run_sync` under a `CapacityLimiter`, its lanes, as many
as the pool's connections, so a thread never waits for a connection and a Trio task waiting
for a turn stays cancellable (SQLite keeps lanes of its own for the hottest reads,
`Unit.read`: `SQLITE_LANES`). No caller above `store/` ever sees a thread or a driver.
Reads that cost little by construction are glances (`Unit.glance`): outside a transaction,
and on SQLite on the Trio thread itself, where a worker thread cost more than the read.

Why threads and not the drivers' asyncio through trio-asyncio (the path until 2026-11): one
hop to a cached worker thread costs a fraction of what the bridge did per query (asyncio
futures, greenlet switches and, for aiosqlite, its own thread per connection);
`bench/bench_db_path.py` measures both paths in one run. The bridge stays only for
PostgreSQL's LISTEN (`listen.py`), which needs a connection that waits.

Cancellation: a thread cannot be interrupted, so a cancelled caller waits for its unit to
finish (units are short; SQLite's busy timeout and the pool bound the worst case), and the
unit checks for cancellation just before committing: a cancelled unit rolls back and its
caller sees `trio.Cancelled`. Either way the connection is back in the pool and no
transaction is left open when `unit` returns or raises.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import trio
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

from .errors import DatabaseUnavailable
from .migrate import upgrade
from .read_only import WriteInARead, checking_reads, refuse_writes
from .urls import sync_url

T = TypeVar("T")
log = logging.getLogger(__name__)
Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class Lanes:
    """How many units may run at once, each on a pooled connection of its own: `units` for
    any unit, and `reads` more for `Unit.read`'s only (0: reads take the units' lanes)."""

    units: int
    reads: int = 0

    @property
    def connections(self) -> int:
        return self.units + self.reads


# SQLite: two lanes for any unit, two more for the reads requests make most. Every row a
# worker thread reads lets go of the GIL and takes it back, so each thread more running
# beside the Trio thread turns rows into GIL hand-offs: `bench_api_load --quick
# --sqlite-only` on one machine, with 1 / 2 / 4 lanes for every unit, gave a listings page
# 4.1x / 4.5x / 5.3x the hello world's CPU, the dashboard 3.8x / 4.5x / 4.9x. And SQLite has
# one writer: a writer waiting for the lock (up to the busy timeout) waits in its lane, so
# with a long write (deleting a monitor of a million listings) and polls waiting behind it
# every general lane can be taken; the read lanes keep pages and the health check answering
# (WAL: readers never wait for the writer).
SQLITE_LANES = Lanes(units=2, reads=2)
POSTGRES_LANES = Lanes(units=10)


# SQLSTATEs of a server that cannot serve: connection exceptions (08...), too many
# connections (53300), shutdown or crash in progress (57P01-57P03).
_OUTAGE_STATES = ("08", "53300", "57P0")


# SQLSTATEs of a transaction PostgreSQL aborted so that another could go on: a deadlock
# (40P01) or, above READ COMMITTED, a serialization failure (40001). The aborted one changed
# nothing, so its unit is run again, from the start, in a new transaction, up to
# `ABORTED_ATTEMPTS` times in all. Lock order keeps deadlocks out of our own writers
# (docs/reliability.md, "Lock order"); this is what a pair nobody ordered yet costs: a
# short wait instead of a 503. So a unit's work must not act outside its session, and
# what it hands out through its arguments must be started afresh by each attempt
# (`MonitorStore.record_poll`); the engine's `decide` functions it runs are pure.
_ABORTED_STATES = ("40P01", "40001")
ABORTED_ATTEMPTS = 3


def _aborted_to_let_another_go_on(err: DBAPIError) -> bool:
    state = getattr(err.orig, "sqlstate", None) or getattr(err.orig, "pgcode", None)
    return state in _ABORTED_STATES


def _is_outage(err: DBAPIError) -> bool:
    state = getattr(err.orig, "sqlstate", None) or getattr(err.orig, "pgcode", None)
    return isinstance(state, str) and state.startswith(_OUTAGE_STATES)


class _Busy(Exception):
    """SQLite asked a glance to wait for a lock."""


def _locked(err: OperationalError) -> bool:
    """Whether SQLite refused for a lock held elsewhere (SQLITE_BUSY, SQLITE_LOCKED)."""
    code = getattr(err.orig, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (5, 6)


def utc_now() -> datetime:
    return datetime.now(UTC)


class Unit:
    """Units of work over one SQLAlchemy engine: the plumbing `Store` (`store/_db/unit.py`)
    and its facades are built on. Construct a `Store` with `open_store`."""

    def __init__(
        self, engine: Engine, url: URL, lanes: Lanes, clock: Clock = utc_now,
        *, glances: Engine | None = None,
    ) -> None:  # fmt: skip
        """`lanes`: how many units may run at once, as many as the pool's connections: a
        thread that waited for a connection could not be cancelled, a task waiting for a turn
        can. `glances`: SQLite's engine for `glance` on the Trio thread (`glance_engine`)."""
        self._engine = engine
        self._glances = glances
        # The pool's connections in autocommit, for reads and for glances in a worker thread:
        # a write there would commit at once (`read_only.py`).
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        if checking_reads():
            refuse_writes(self._autocommit)
        self._url = url
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._read_sessions = sessionmaker(self._autocommit, expire_on_commit=False)
        self._turns = trio.CapacityLimiter(lanes.units)
        self._read_turns = trio.CapacityLimiter(lanes.reads) if lanes.reads else self._turns
        self.clock = clock

    @property
    def url(self) -> URL:
        """The database URL as configured (LISTEN connects asyncpg with it)."""
        return self._url

    @property
    def dialect(self) -> str:
        return self._engine.dialect.name

    async def unit(self, work: Callable[[Session], T]) -> T:
        """Run `work` in one transaction, in a worker thread: committed if it returns, rolled
        back if it raises or if the caller was cancelled meanwhile (see the module docstring)."""
        return await self._in_thread(self._transaction(work, self._sessions), self._turns)

    async def read(self, work: Callable[[Session], T]) -> T:
        """`unit`, for a read that many requests make (the dashboard, a run): in the read
        lanes where there are some (SQLite: `SQLITE_LANES`), which no writer waiting for the
        database's lock can take; and outside a transaction, each statement reading the
        database as it is when the statement starts, as it does in a transaction at READ
        COMMITTED (PostgreSQL's, and SQLite's driver opens none for a read). On PostgreSQL
        that spares a read the round trips of BEGIN and COMMIT. `work` must not write: the
        test suite refuses one with `WriteInARead` (`read_only.py`)."""
        return await self._in_thread(self._transaction(work, self._read_sessions), self._read_turns)

    async def glance(self, work: Callable[[Connection], T]) -> T:
        """A read that costs little by construction (rows found by key, a page of at most a
        few hundred index entries) and that many requests make: outside any transaction,
        each statement reading the database as it is when the statement starts. `work`
        must not write: SQLite's connection here and the test suite refuse one with
        `WriteInARead` (`read_only.py`).

        PostgreSQL: in a worker thread, in the read lanes, in autocommit: a statement is one
        round trip, where BEGIN and COMMIT made it three. SQLite: here, on the Trio thread,
        on a connection of its own (`glance_engine`). The hop to a worker thread cost more
        than such a read: each step of a statement lets go of the GIL, and with two threads
        on two cores taking it in turns, a listings page cost 2.9 ms of CPU against 1.8 ms
        read here (docs/request-cost.md). A reader never waits for SQLite's writer (WAL);
        should it have to wait for a lock anyway (a connection recovering the journal, or
        one holding the database exclusively), it is not kept waiting here but read again in
        a worker thread, which waits as a unit does."""
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._glances is not None:
            try:
                with _database_errors():
                    found = _glance_here(self._glances, work)
            except _Busy:
                pass
            else:
                # A checkpoint, as Trio's own operations that finish at once have: a caller
                # glancing in a loop still lets the other tasks run.
                await trio.lowlevel.cancel_shielded_checkpoint()
                return found
        return await self._in_thread(lambda: _connected(self._autocommit, work), self._read_turns)

    def _transaction(
        self, work: Callable[[Session], T], sessions: sessionmaker[Session]
    ) -> Callable[[], T]:
        def in_thread() -> T:
            for attempt in range(1, ABORTED_ATTEMPTS + 1):
                try:
                    with sessions() as db, db.begin():
                        result = work(db)
                        # Raises `trio.Cancelled` here, inside the transaction, if the caller
                        # was cancelled while `work` ran: the block rolls back, not commits.
                        trio.from_thread.check_cancelled()
                        return result
                except DBAPIError as err:
                    if attempt == ABORTED_ATTEMPTS or not _aborted_to_let_another_go_on(err):
                        raise
                    log.warning("unit of work aborted (%s), attempt %d", err.orig, attempt)
                    time.sleep(random.uniform(0.005, 0.05) * attempt)  # apart from the other
                    trio.from_thread.check_cancelled()  # a caller gone meanwhile: no retry
            raise AssertionError("unreachable: the last attempt returns or raises")

        return in_thread

    async def _in_thread(self, call: Callable[[], T], turns: trio.CapacityLimiter) -> T:
        with _database_errors():
            return await trio.to_thread.run_sync(call, limiter=turns)

    async def ping(self) -> None:
        """Check the database answers; `DatabaseUnavailable` if it does not."""
        # Outside a transaction: one round trip where BEGIN, SELECT and COMMIT were three.
        select_one = text("SELECT 1")
        await self._in_thread(
            lambda: _connected(self._autocommit, lambda c: c.scalar(select_one)),
            self._read_turns,
        )


@contextmanager
def _database_errors() -> Iterator[None]:
    """A database that cannot serve raised as `DatabaseUnavailable` (a 503)."""
    try:
        yield
    except (OperationalError, OSError, PoolTimeout) as err:
        raise DatabaseUnavailable(type(err).__name__) from err
    except DBAPIError as err:
        # A dropped connection surfaces as a plain DBAPIError flagged `connection_invalidated`,
        # a server refusing connections or shutting down by its SQLSTATE; anything else (a
        # constraint, a bad query) is a bug or a conflict, not an outage.
        if err.connection_invalidated or _is_outage(err):
            raise DatabaseUnavailable(type(err.orig).__name__) from err
        raise


def _connected(engine: Engine, work: Callable[[Connection], T]) -> T:
    with engine.connect() as connection:
        return work(connection)


def _glance_here(glances: Engine, work: Callable[[Connection], T]) -> T:
    """A glance on the Trio thread's own SQLite connection; `_Busy` when SQLite would make it
    wait for a lock."""
    try:
        return _connected(glances, work)
    except OperationalError as err:
        if _locked(err):
            raise _Busy() from err
        if _read_only(err):  # `PRAGMA query_only` (`read_only.py`)
            raise WriteInARead(str(err.orig)) from err
        raise


def _read_only(err: OperationalError) -> bool:
    """Whether SQLite refused a write on a `query_only` connection: SQLITE_READONLY itself,
    not its extended codes (a read-only file or a moved database: the database's fault)."""
    return getattr(err.orig, "sqlite_errorcode", None) == 8


def _prepare_sqlite(
    engine: Engine, busy_timeout_ms: int = 30_000, *, query_only: bool = False
) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # WAL lets readers run beside the one writer; the busy timeout makes writers queue
        # instead of failing with "database is locked"; SQLite leaves foreign keys off unless
        # asked. `query_only`: SQLite itself refuses any write on the connection.
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        if query_only:
            cursor.execute("PRAGMA query_only=ON")
        cursor.close()


# A connection unused this long is checked before use (a server restart or a proxy's idle
# timeout drops connections quietly); a busy one is not: `pool_pre_ping` checked every
# checkout, one more round trip per unit of work. A connection that died while busy fails its
# unit once (503), and SQLAlchemy then recycles the whole pool.
IDLE_PING_SECONDS = 10.0


def _ping_when_idle(engine: Engine) -> None:
    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is None or time.monotonic() - idle_since < IDLE_PING_SECONDS:
            return
        try:
            cursor = dbapi_connection.cursor()
            cursor.execute("SELECT 1")
            cursor.close()
            dbapi_connection.rollback()  # the driver opened a transaction for the probe
        except Exception as err:
            # The pool drops this connection and tries another (or a new one).
            raise DisconnectionError() from err


def ensure_sqlite_folder(database_url: str) -> None:
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        Path(str(url.database)).expanduser().parent.mkdir(parents=True, exist_ok=True)


async def migrate(database_url: str) -> None:
    """Apply every pending migration (in a worker thread: Alembic is blocking)."""
    ensure_sqlite_folder(database_url)
    await trio.to_thread.run_sync(upgrade, database_url)


def create_sync_engine(database_url: str) -> tuple[Engine, Lanes]:
    """The engine `open_store` works through, and how many units may run at once on it (its
    pool has a connection for each)."""
    url = make_url(database_url)
    sqlite = url.get_backend_name() == "sqlite"
    lanes = SQLITE_LANES if sqlite else POSTGRES_LANES
    options: dict[str, Any] = {"pool_size": lanes.connections, "max_overflow": 0}
    if sqlite:
        options["connect_args"] = {"timeout": 30}
    engine = create_engine(sync_url(url), **options)
    if sqlite:
        _prepare_sqlite(engine)
    else:
        _ping_when_idle(engine)
    return engine, lanes


def glance_engine(engine: Engine) -> Engine | None:
    """SQLite: the engine of `Unit.glance` on the Trio thread, one connection to the same
    file in autocommit that never waits for a lock (the glance goes to a worker thread
    instead); None for other databases. Only the Trio thread uses it, one glance at a time
    (a glance does not await), so one connection serves them all; close it with
    `engine.dispose()` on that thread, which made the connection."""
    if engine.dialect.name != "sqlite" or engine.url.database in (None, "", ":memory:"):
        return None  # (a database in memory is the pool's own connection's alone)
    glances = create_engine(
        engine.url, pool_size=1, max_overflow=0, isolation_level="AUTOCOMMIT",
        connect_args={"timeout": 0},
    )  # fmt: skip
    _prepare_sqlite(glances, busy_timeout_ms=0, query_only=True)
    if checking_reads():
        refuse_writes(glances)
    return glances


async def dispose(engine: Engine) -> None:
    """Close the engine's connections, even from a cancelled scope."""
    with trio.CancelScope(shield=True):
        await trio.to_thread.run_sync(engine.dispose)
