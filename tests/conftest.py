"""Shared fixtures: real databases (SQLite file and PostgreSQL) and the real service on a socket.

PostgreSQL: a migrated template database per test session and a clone of it per test, on the
server named by `NICHESCOPE_TEST_PG_URL` (default: the local server's `test` database), all
dropped afterwards.
Unreachable PostgreSQL skips those tests, unless `NICHESCOPE_REQUIRE_PG=1` (CI) makes it fail.
"""

from __future__ import annotations

import asyncio
import dataclasses
import email
import email.policy
import os
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import trio
import trio_asyncio
from sqlalchemy.engine import make_url

from api.process.serve import ServeOptions, serve
from api.settings import Settings
from engine import Marketplace
from store import MonitorRecord, NewMonitor, NewUser, Store, open_store
from store._db.migrate import upgrade
from store._db.read_only import check_reads_for_writes
from tests.engine.fake_market import FakeMarket

# Every read and glance the suite runs is checked for writes (off in a service: its cost,
# `store/_db/read_only.py`).
check_reads_for_writes()

PG_ADMIN_URL = os.environ.get(
    "NICHESCOPE_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
REQUIRE_PG = os.environ.get("NICHESCOPE_REQUIRE_PG") == "1"
BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


async def _pg_admin(statement: str) -> None:
    import asyncpg

    url = make_url(PG_ADMIN_URL)
    connection = await asyncpg.connect(
        host=url.host,
        port=url.port,
        user=url.username,
        password=url.password,
        database=url.database,
        timeout=5,
    )
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[str]:
    """A migrated PostgreSQL database that each test clones (CREATE DATABASE ... TEMPLATE)."""
    name = f"nichescope_tpl_{uuid.uuid4().hex[:12]}"
    try:
        asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
    except (TimeoutError, OSError, ImportError) as err:
        message = f"PostgreSQL unreachable at {PG_ADMIN_URL}: {err!r}"
        if REQUIRE_PG:
            pytest.fail(message + " (NICHESCOPE_REQUIRE_PG=1)")
        pytest.skip(message)
    try:
        upgrade(_pg_url(name))
        yield name
    finally:
        asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _pg_url(database: str) -> str:
    return make_url(PG_ADMIN_URL).set(database=database).render_as_string(hide_password=False)


@pytest.fixture
def postgres_url(postgres_template: str) -> Iterator[str]:
    """A fresh database per test (about 0.1 s): tests, and the engines they start, see only
    their own monitors."""
    name = f"nichescope_test_{uuid.uuid4().hex[:12]}"
    asyncio.run(_pg_admin(f'CREATE DATABASE "{name}" TEMPLATE "{postgres_template}"'))
    try:
        yield _pg_url(name)
    finally:
        asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated SQLite file; each test gets a copy (migrating per test would be slow)."""
    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path) -> str:
    if request.param == "sqlite":
        path = tmp_path / "test.db"
        shutil.copy(sqlite_template, path)
        return f"sqlite+aiosqlite:///{path}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Store]:
    async with trio_asyncio.open_loop(), open_store(database_url) as opened:
        yield opened


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url,
        cookie_secure=False,
        outbox_dir=tmp_path / "outbox",
        public_url="http://testserver.local",
        operators=("ops@example.com",),
        # Tests start many monitors and runs per account and poll fast; the trial's real
        # quotas are the billing tests' business.
        plan_quotas={
            "trial": {
                "active_monitors": 50,
                "runs_per_day": 500,
                "items_per_run": 5000,
                "min_poll_seconds": 1,
            }
        },
    )


class ServiceClient(httpx.AsyncClient):
    """An HTTP client of a test service; knows the service (its outbox) for helpers."""

    service: RunningService


@dataclasses.dataclass
class RunningService:
    url: str
    settings: Settings

    def client(self, **kwargs: object) -> ServiceClient:
        client = ServiceClient(base_url=self.url, timeout=30, **kwargs)  # type: ignore[arg-type]
        client.service = self
        return client

    async def mails(self, *needles: str, count: int = 1) -> list[str]:
        """The outbox's messages holding every needle, once there are at least `count`: some
        mail leaves after the answer (the app's background tasks), so tests wait for it."""
        with trio.fail_after(30):
            while len(found := [m for m in self.outbox() if all(n in m for n in needles)]) < count:
                await trio.sleep(0.02)
        return found

    def mails_blocking(self, *needles: str, count: int = 1) -> list[str]:
        """`mails` for a browser scenario's thread."""
        deadline = time.monotonic() + 30
        while len(found := [m for m in self.outbox() if all(n in m for n in needles)]) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no mail holding {needles}")
            time.sleep(0.02)
        return found

    def outbox(self) -> list[str]:
        folder = self.settings.outbox_dir
        if not folder.exists():
            return []
        files = sorted(folder.glob("*.eml"), key=lambda p: p.stat().st_mtime_ns)
        messages = [
            email.message_from_bytes(p.read_bytes(), policy=email.policy.default) for p in files
        ]
        return [
            f"To: {m['To']}\nSubject: {m['Subject']}\n\n{m.get_content()}"  # type: ignore[attr-defined]
            for m in messages
        ]


async def start_service(
    nursery: trio.Nursery, settings: Settings, market: Marketplace | None = None
) -> tuple[RunningService, trio.Event]:
    stop = trio.Event()
    binds = await nursery.start(
        lambda task_status: serve(
            settings,
            ServeOptions(port=0, graceful_seconds=1),
            market=market,
            shutdown_trigger=stop,
            task_status=task_status,
        )
    )
    return RunningService(url=binds[0], settings=settings), stop


@pytest.fixture
def market() -> FakeMarket:
    return FakeMarket()


@pytest.fixture
async def service(
    settings: Settings, market: FakeMarket, nursery: trio.Nursery
) -> AsyncIterator[RunningService]:
    running, stop = await start_service(nursery, settings, market)
    yield running
    stop.set()


def unique_email(prefix: str = "user") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}@example.com"


async def new_workspace(store: Store) -> str:
    """A user with a workspace of its own, straight through the store; the workspace id."""
    suffix = uuid.uuid4().hex[:12]
    user = await store.create_user(
        NewUser(
            user_id=f"usr_{suffix}",
            workspace_id=f"ws_{suffix}",
            email=unique_email(),
            name=None,
            password_hash="h",
        )
    )
    return user.workspace_id


async def new_monitor(
    store: Store,
    workspace_id: str | None = None,
    *,
    url: str = "https://www.vinted.fr/catalog",
    label: str | None = None,
    interval_seconds: int = 60,
    page_cap: int = 5,
) -> MonitorRecord:
    """A monitor straight through the store (`paused`, due at once), in a new workspace
    unless given."""
    return await store.monitors.create(
        NewMonitor(
            monitor_id=f"mon_{uuid.uuid4().hex[:12]}",
            workspace_id=workspace_id or await new_workspace(store),
            url=url,
            label=label,
            interval_seconds=interval_seconds,
            page_cap=page_cap,
        )
    )
