"""The trio-facing Store: the only way anything reaches the database.

Each unit of work is one transaction on SQLAlchemy's sync engine (sqlite3, psycopg 3), run in
a worker thread by `trio.to_thread.run_sync` under a `CapacityLimiter` as wide as the
connection pool, so a thread never waits for a connection and a Trio task waiting for a
turn stays cancellable. No caller above `store/` ever sees a thread or a driver.

Why threads and not the drivers' asyncio through trio-asyncio (the path until 2026-11): one
hop to a cached worker thread costs a fraction of what the bridge did per query (asyncio
futures, greenlet switches and, for aiosqlite, its own thread per connection);
`bench/bench_db_path.py` measures both paths in one run. The bridge stays only for
PostgreSQL's LISTEN (`_notifications`), which needs a connection that waits.

Cancellation: a thread cannot be interrupted, so a cancelled caller waits for its unit to
finish (units are short; SQLite's busy timeout and the pool bound the worst case), and the
unit checks for cancellation just before committing: a cancelled unit rolls back and its
caller sees `trio.Cancelled`. Either way the connection is back in the pool and no
transaction is left open when `unit` returns or raises.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import trio
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

from . import _accounts as accounts
from ._billing_store import BillingStore
from ._cluster_store import ClusterStore
from ._confirmation_store import ConfirmationStore
from ._confirmations import mark_email_proven
from ._errors import DatabaseUnavailable
from ._market_store import MarketStore
from ._migrate import upgrade
from ._monitor_store import MonitorStore
from ._notifications import listen
from ._notify_store import NotifyStore
from ._price_book_store import PriceBookStore
from ._records import (
    AccessTokenRecord,
    Credentials,
    NewAccessToken,
    NewUser,
    SessionOwner,
    TokenOwner,
    UserRecord,
)
from ._run_store import RunStore
from ._urls import sync_url

T = TypeVar("T")
Clock = Callable[[], datetime]

SQLITE_POOL = 4


# SQLSTATEs of a server that cannot serve: connection exceptions (08...), too many
# connections (53300), shutdown or crash in progress (57P01-57P03).
_OUTAGE_STATES = ("08", "53300", "57P0")


def _is_outage(err: DBAPIError) -> bool:
    state = getattr(err.orig, "sqlstate", None) or getattr(err.orig, "pgcode", None)
    return isinstance(state, str) and state.startswith(_OUTAGE_STATES)


def utc_now() -> datetime:
    return datetime.now(UTC)


class Store:
    """Units of work over one SQLAlchemy async engine. Construct with `open_store`.

    Account methods live here; each later domain (billing, monitors, runs, ...) gets its own
    facade class in its own module, built on `unit`, and attached as an attribute in
    `__init__` (for example `store.billing`), so that no single file grows without bound.
    """

    def __init__(self, engine: Engine, url: URL, turns: int, clock: Clock = utc_now) -> None:
        """`turns`: how many units may run at once, the pool's size and overflow: a thread
        that waited for a connection could not be cancelled, a task waiting for a turn can."""
        self._engine = engine
        self._url = url
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._turns = trio.CapacityLimiter(turns)
        self.clock = clock
        self.monitors = MonitorStore(self)
        self.runs = RunStore(self)
        self.billing = BillingStore(self)
        self.cluster = ClusterStore(self)
        self.market = MarketStore(self)
        self.notify = NotifyStore(self)
        self.prices = PriceBookStore(self)  # the market's price book, per site
        self.confirmations = ConfirmationStore(self)

    @property
    def url(self) -> URL:
        """The database URL as configured (with its asyncio driver name: LISTEN uses it)."""
        return self._url

    @property
    def dialect(self) -> str:
        return self._engine.dialect.name

    async def unit(self, work: Callable[[Session], T]) -> T:
        """Run `work` in one transaction, in a worker thread: committed if it returns, rolled
        back if it raises or if the caller was cancelled meanwhile (see the module docstring)."""

        def in_thread() -> T:
            with self._sessions() as db, db.begin():
                result = work(db)
                # Raises `trio.Cancelled` here, inside the transaction, if the caller was
                # cancelled while `work` ran: the block rolls back instead of committing.
                trio.from_thread.check_cancelled()
                return result

        return await self._in_thread(in_thread)

    async def _in_thread(self, call: Callable[[], T]) -> T:
        try:
            return await trio.to_thread.run_sync(call, limiter=self._turns)
        except (OperationalError, OSError, PoolTimeout) as err:
            raise DatabaseUnavailable(type(err).__name__) from err
        except DBAPIError as err:
            # A dropped connection surfaces as a plain DBAPIError flagged `connection_invalidated`,
            # a server refusing connections or shutting down by its SQLSTATE; anything else (a
            # constraint, a bad query) is a bug or a conflict, not an outage.
            if err.connection_invalidated or _is_outage(err):
                raise DatabaseUnavailable(type(err.orig).__name__) from err
            raise

    async def ping(self) -> None:
        """Check the database answers; `DatabaseUnavailable` if it does not."""

        def select_one() -> None:
            # Outside a transaction: one round trip where BEGIN, SELECT and COMMIT were three.
            with self._engine.connect() as connection:
                autocommit = connection.execution_options(isolation_level="AUTOCOMMIT")
                autocommit.scalar(text("SELECT 1"))

        await self._in_thread(select_one)

    # -- accounts ----------------------------------------------------------------------------

    async def create_user(self, new: NewUser) -> UserRecord:
        now = self.clock()
        return await self.unit(lambda db: accounts.create_user(db, new, now))

    async def get_credentials(self, email: str) -> Credentials | None:
        return await self.unit(lambda db: accounts.get_credentials(db, email))

    async def get_user(self, user_id: str) -> UserRecord | None:
        return await self.unit(lambda db: accounts.get_user(db, user_id))

    async def set_user_name(self, user_id: str, name: str | None) -> UserRecord | None:
        return await self.unit(lambda db: accounts.set_name(db, user_id, name))

    async def add_session(self, *, token_hash: str, user_id: str, expires_at: datetime) -> None:
        now = self.clock()
        await self.unit(
            lambda db: accounts.add_session(
                db, token_hash=token_hash, user_id=user_id, now=now, expires_at=expires_at
            )
        )

    async def find_session(self, token_hash: str) -> SessionOwner | None:
        now = self.clock()
        return await self.unit(lambda db: accounts.find_session(db, token_hash, now))

    async def delete_session(self, token_hash: str) -> int:
        return await self.unit(lambda db: accounts.delete_session(db, token_hash))

    async def listen_for_session_ends(self, on_end: Callable[[str | None], None]) -> None:
        """PostgreSQL only: `on_end(token_hash)` for every session any node ends (logout,
        password reset), `on_end(None)` after (re)connecting, for what may have been missed;
        until cancelled (see `_notifications`)."""
        await listen(self.url, accounts.SESSIONS_ENDED_CHANNEL, on_end)

    async def delete_expired_sessions(self) -> int:
        now = self.clock()
        return await self.unit(lambda db: accounts.delete_expired_sessions(db, now))

    async def add_password_reset(
        self, *, token_hash: str, user_id: str, expires_at: datetime
    ) -> None:
        now = self.clock()
        await self.unit(
            lambda db: accounts.add_password_reset(
                db, token_hash=token_hash, user_id=user_id, now=now, expires_at=expires_at
            )
        )

    async def reset_password(
        self, token_hash: str, password_hash: str, *, revoke_tokens: bool
    ) -> list[str] | None:
        """Use a reset token, set the password, end every session of the user and, with
        `revoke_tokens`, revoke every access token of the user, atomically.

        Returns the ended sessions' and revoked tokens' hashes (for cache invalidation), or
        None if the token is unknown, used or expired, in which case nothing changes.
        """
        now = self.clock()

        def work(db: Session) -> list[str] | None:
            user_id = accounts.consume_password_reset(db, token_hash, now)
            if user_id is None:
                return None
            accounts.set_password(db, user_id, password_hash)
            # The link was mailed to the account's address: using it proves that address.
            mark_email_proven(db, user_id, None, now)
            revoked = accounts.revoke_user_tokens(db, user_id, now) if revoke_tokens else []
            return accounts.delete_user_sessions(db, user_id) + revoked

        return await self.unit(work)

    async def tokens_at_reset(self, token_hash: str) -> list[AccessTokenRecord] | None:
        """The live access tokens of the user a live reset token belongs to (what the reset
        page offers to revoke); None if the reset token is unknown, used or expired."""
        now = self.clock()

        def work(db: Session) -> list[AccessTokenRecord] | None:
            user_id = accounts.live_password_reset_user(db, token_hash, now)
            if user_id is None:
                return None
            tokens = accounts.list_access_tokens(db, user_id)
            return [token for token in tokens if token.revoked_at is None]

        return await self.unit(work)

    async def add_access_token(self, new: NewAccessToken) -> AccessTokenRecord:
        now = self.clock()
        return await self.unit(lambda db: accounts.add_access_token(db, new, now))

    async def list_access_tokens(self, user_id: str) -> list[AccessTokenRecord]:
        return await self.unit(lambda db: accounts.list_access_tokens(db, user_id))

    async def revoke_access_token(self, *, user_id: str, token_id: str) -> AccessTokenRecord | None:
        now = self.clock()
        return await self.unit(
            lambda db: accounts.revoke_access_token(db, user_id=user_id, token_id=token_id, now=now)
        )

    async def use_access_token(self, token_hash: str) -> TokenOwner | None:
        now = self.clock()
        return await self.unit(lambda db: accounts.use_access_token(db, token_hash, now))


def _prepare_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # WAL lets readers run beside the one writer; the busy timeout makes writers queue
        # instead of failing with "database is locked"; SQLite leaves foreign keys off unless asked.
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
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


def _ensure_sqlite_folder(database_url: str) -> None:
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        Path(str(url.database)).expanduser().parent.mkdir(parents=True, exist_ok=True)


async def migrate(database_url: str) -> None:
    """Apply every pending migration (in a worker thread: Alembic is blocking)."""
    _ensure_sqlite_folder(database_url)
    await trio.to_thread.run_sync(upgrade, database_url)


@asynccontextmanager
async def open_store(
    database_url: str, *, run_migrations: bool = False, clock: Clock = utc_now
) -> AsyncIterator[Store]:
    """Open the database for the lifetime of the block.

    With `run_migrations`, pending migrations are applied first (the embedded SQLite default
    migrates itself this way). The engine's connections are closed on exit, even on error.
    """
    _ensure_sqlite_folder(database_url)
    if run_migrations:
        await migrate(database_url)
    url = make_url(database_url)
    options: dict[str, Any] = {"pool_size": 10, "max_overflow": 0}
    if url.get_backend_name() == "sqlite":
        # SQLite has one writer, and Python one core's worth of readers: a few connections
        # beat many threads contending for the GIL (see bench_api_load).
        options = {"connect_args": {"timeout": 30}, "pool_size": SQLITE_POOL, "max_overflow": 0}
    engine = create_engine(sync_url(url), **options)
    if url.get_backend_name() == "sqlite":
        _prepare_sqlite(engine)
    else:
        _ping_when_idle(engine)
    try:
        yield Store(engine, url, options["pool_size"] + options["max_overflow"], clock)
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(engine.dispose)
