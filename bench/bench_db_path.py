"""Database paths for the Store, measured against each other in one run, on SQLite and on
PostgreSQL: the CPU one unit of work costs this process on each candidate path.

Run: `python -m bench.bench_db_path [--quick | --smoke] [--rounds N]` (full: about 9 minutes, 5
s per cell; `--quick`: about 2.5, 1 s per cell; `--smoke`: seconds). Every cell is measured in
`--rounds` rounds (3), the paths in alternated order, each figure the median of its rounds.
PostgreSQL: the local server at 127.0.0.1:5432 (trust auth, user postgres); a throwaway database
is created and dropped at the end. Without a reachable server only SQLite is measured (in a
temporary directory).

Paths (every unit is one transaction; SQLite connections get the store's pragmas: WAL,
foreign keys, busy timeout 30 s, synchronous NORMAL):

- `bridge`: the service's old path, the baseline: SQLAlchemy `AsyncSession` over aiosqlite /
  asyncpg, each unit run as `trio_asyncio.aio_as_trio(fn)()` on a trio-asyncio loop.
- `orm`: SQLAlchemy sync `Session` (sqlite3 / psycopg 3) in `trio.to_thread.run_sync` under a
  `CapacityLimiter` as wide as the pool (SQLite 3 connections, PostgreSQL 5 + 10 overflow).
- `core`: the same engine, `engine.begin()` and a Core `select` (no ORM objects), in threads.
- `raw`: the plain driver (sqlite3 / psycopg) in threads, with a pool kept by hand: the floor.

Operations: `select1` (SELECT 1) and `run` (one row of `runs` by id, out of 50 on a freshly
migrated schema, built into a `RunRecord` as the store does).

Reading it: `CPU us/op` is this process's CPU (user + system, every thread) over the ops done,
with one task doing ops in sequence (`1 task`) and with 20 concurrent Trio tasks (`20 tasks`);
`ops/s` is the wall throughput of the 20 tasks. PostgreSQL's own CPU is in its server processes
and not counted. The closing lines give each path's CPU per op as a multiple of the bridge's on
the same database and operation: `0.25x` costs a quarter of the bridge's CPU. The gap between a
path and `raw` is what its SQLAlchemy layer costs. Under shared load, trust ratios over figures.
"""

from __future__ import annotations

import argparse
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
import trio
import trio_asyncio
from sqlalchemy import create_engine, event, insert, select, text
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine
from sqlalchemy.orm import sessionmaker

from bench._common import cpu_seconds, load_note, verdict
from store._db.migrate import upgrade
from store._db.rows import to_record
from store.accounts.models import Workspace
from store.runs.models import Run
from store.runs.records import RunRecord

PG_SERVER = "host=127.0.0.1 port=5432 user=postgres"
TASKS = 20
RUNS = 50
PATHS = ("bridge", "orm", "core", "raw")
OPS = ("select1", "run")
PRAGMAS = ("journal_mode=WAL", "foreign_keys=ON", "busy_timeout=30000", "synchronous=NORMAL")
ONE = text("SELECT 1")
RUNS_TABLE = Run.__table__
COLUMNS = [f.name for f in fields(RunRecord)]  # type: ignore[arg-type]
DATETIMES = [COLUMNS.index(name) for name in ("created_at", "started_at", "finished_at")]
Op = Callable[[str], Awaitable[Any]]


@dataclass(frozen=True)
class Db:
    name: str  # "sqlite" or "postgres"
    async_url: str
    sync_url: str
    raw: str  # a file path (SQLite) or a psycopg conninfo

    @property
    def sqlite(self) -> bool:
        return self.name == "sqlite"

    def pool(self) -> dict[str, Any]:
        """The sync paths' pool: the bridge's, pinned, so that the limiter can match it."""
        if self.sqlite:
            return {"pool_size": 3, "max_overflow": 0, "connect_args": {"timeout": 30}}
        return {"pool_size": 5, "max_overflow": 10}

    def width(self) -> int:
        return self.pool()["pool_size"] + self.pool()["max_overflow"]


def _pragmas(dbapi_connection: Any, _record: Any = None) -> None:
    cursor = dbapi_connection.cursor()
    for pragma in PRAGMAS:
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _seed(db: Db) -> list[str]:
    """Migrate a fresh database and insert RUNS finished runs; their ids."""
    upgrade(db.async_url)
    engine = create_engine(db.sync_url)
    now = datetime.now(UTC)
    ids = [f"run_bench{i:03d}" for i in range(RUNS)]
    with engine.begin() as conn:
        conn.execute(insert(Workspace), [dict(id="wsp_bench", name="bench", created_at=now)])
        conn.execute(insert(Run), [dict(
            id=run_id, workspace_id="wsp_bench", label=f"bench run {i}", source="url",
            url="https://x.invalid/catalog", monitor_id=None, max_items=500, state="succeeded",
            replay_of=None, created_at=now - timedelta(minutes=i + 2),
            started_at=now - timedelta(minutes=i + 1), finished_at=now - timedelta(minutes=i),
            progress=1.0, items=480, error=None, analysis_id=f"ana_bench{i:03d}",
            lease_owner=None, lease_token=0, lease_expires_at=None, include_likely_sales=False)
            for i, run_id in enumerate(ids)])  # fmt: skip
    engine.dispose()
    return ids


@asynccontextmanager
async def _bridge(db: Db) -> AsyncIterator[dict[str, Op]]:
    async with trio_asyncio.open_loop():
        options = db.pool() if db.sqlite else {"pool_pre_ping": True}
        engine = create_async_engine(db.async_url, **options)
        if db.sqlite:
            event.listen(engine.sync_engine, "connect", _pragmas)
        sessions = async_sessionmaker(engine, expire_on_commit=False)

        async def select1(_run_id: str) -> Any:
            async with sessions() as session, session.begin():
                return (await session.execute(ONE)).scalar_one()

        async def run(run_id: str) -> RunRecord:
            async with sessions() as session, session.begin():
                row = await session.scalar(select(Run).where(Run.id == run_id))
                return to_record(RunRecord, row)

        def bridged(fn: Callable[[str], Awaitable[Any]]) -> Op:
            return lambda run_id: trio_asyncio.aio_as_trio(lambda: fn(run_id))()

        try:
            yield {"select1": bridged(select1), "run": bridged(run)}
        finally:
            with trio.CancelScope(shield=True):
                await trio_asyncio.aio_as_trio(engine.dispose)()


def _threaded(units: dict[str, Callable[[str], Any]], width: int) -> dict[str, Op]:
    limiter = trio.CapacityLimiter(width)

    def threaded(fn: Callable[[str], Any]) -> Op:
        return lambda run_id: trio.to_thread.run_sync(fn, run_id, limiter=limiter)

    return {name: threaded(fn) for name, fn in units.items()}


@asynccontextmanager
async def _sync(db: Db, core: bool) -> AsyncIterator[dict[str, Op]]:
    engine = create_engine(db.sync_url, pool_pre_ping=True, **db.pool())
    if db.sqlite:
        event.listen(engine, "connect", _pragmas)
    sessions = sessionmaker(engine, expire_on_commit=False)

    def orm_select1(_run_id: str) -> Any:
        with sessions() as session, session.begin():
            return session.execute(ONE).scalar_one()

    def orm_run(run_id: str) -> RunRecord:
        with sessions() as session, session.begin():
            return to_record(RunRecord, session.scalar(select(Run).where(Run.id == run_id)))

    def core_select1(_run_id: str) -> Any:
        with engine.begin() as conn:
            return conn.execute(ONE).scalar_one()

    def core_run(run_id: str) -> RunRecord:
        with engine.begin() as conn:
            query = select(RUNS_TABLE).where(RUNS_TABLE.c.id == run_id)
            return to_record(RunRecord, conn.execute(query).one())

    units = {"select1": core_select1, "run": core_run} if core else {
        "select1": orm_select1, "run": orm_run}  # fmt: skip
    try:
        yield _threaded(units, db.width())
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(engine.dispose)


@asynccontextmanager
async def _raw(db: Db) -> AsyncIterator[dict[str, Op]]:
    idle: list[Any] = []  # list.pop / append are atomic; the limiter bounds the connections
    mark = "?" if db.sqlite else "%s"
    by_id = f"SELECT {', '.join(COLUMNS)} FROM runs WHERE id = {mark}"

    def connect() -> Any:
        if not db.sqlite:
            return psycopg.connect(db.raw)
        conn = sqlite3.connect(db.raw, timeout=30, check_same_thread=False)
        _pragmas(conn)
        return conn

    def record(row: Sequence[Any]) -> RunRecord:
        values = list(row)
        if db.sqlite:  # what SQLAlchemy's SQLite DateTime and UtcDateTime do
            for i in DATETIMES:
                if values[i] is not None:
                    values[i] = datetime.fromisoformat(values[i]).replace(tzinfo=UTC)
            values[-1] = bool(values[-1])
        return RunRecord(*values)

    def unit(query: str, params: tuple[Any, ...]) -> Any:
        conn = idle.pop() if idle else connect()
        try:
            row = conn.execute(query, params).fetchone()
            conn.commit()
            return row
        finally:
            idle.append(conn)

    units = {"select1": lambda _run_id: unit("SELECT 1", ())[0],
             "run": lambda run_id: record(unit(by_id, (run_id,)))}  # fmt: skip
    try:
        yield _threaded(units, db.width())
    finally:
        for conn in idle:
            conn.close()


def _open(db: Db, path: str) -> Any:
    if path == "bridge":
        return _bridge(db)
    return _raw(db) if path == "raw" else _sync(db, core=path == "core")


async def _cell(op: Op, ids: list[str], tasks: int, seconds: float) -> tuple[float, float]:
    """`tasks` tasks doing `op` back to back for `seconds`: (CPU us per op, ops per second)."""
    done = 0
    deadline = trio.current_time() + seconds

    async def worker(start: int) -> None:
        nonlocal done
        i = start
        while trio.current_time() < deadline:
            await op(ids[i % len(ids)])
            i += 1
            done += 1

    cpu, wall = cpu_seconds(), time.perf_counter()
    async with trio.open_nursery() as nursery:
        for k in range(tasks):
            nursery.start_soon(worker, k * 7)
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    return cpu / max(done, 1) * 1e6, done / wall


Figures = dict[tuple[str, str, str], tuple[float, float, float]]  # (1 task, 20 tasks, ops/s)


async def _measure(dbs: list[tuple[Db, list[str]]], seconds: float, rounds: int) -> Figures:
    """Every cell `rounds` times, the paths in alternated order (bridge first, then last, ...),
    so that neither the baseline nor any candidate always runs first on a cold machine; each
    figure is the median of its rounds."""
    samples: dict[tuple[str, str, str], list[tuple[float, float, float]]] = {}
    print(f"{'db':<9}{'path':<8}{'op':<9}{'CPU us/op 1 task':>17}{'20 tasks':>10}"
          f"{'ops/s 20 tasks':>16}  round", flush=True)  # fmt: skip
    for turn in range(rounds):
        for db, ids in dbs:
            for path in PATHS if turn % 2 == 0 else PATHS[::-1]:
                async with _open(db, path) as ops:
                    record = await ops["run"](ids[3])
                    assert isinstance(record, RunRecord) and record.id == ids[3], record
                    assert record.created_at.tzinfo is not None, record
                    for name in OPS:
                        await _cell(ops[name], ids, TASKS, min(0.3, seconds))  # pool, caches
                        one, _ = await _cell(ops[name], ids, 1, seconds)
                        many, rate = await _cell(ops[name], ids, TASKS, seconds)
                        samples.setdefault((db.name, path, name), []).append((one, many, rate))
                        print(f"{db.name:<9}{path:<8}{name:<9}{one:>17.0f}{many:>10.0f}"
                              f"{rate:>16,.0f}  {turn + 1}", flush=True)  # fmt: skip
    return {
        key: (statistics.median(s[0] for s in cells), statistics.median(s[1] for s in cells),
              statistics.median(s[2] for s in cells))
        for key, cells in samples.items()
    }  # fmt: skip


def _report(figures: Figures) -> bool:
    """Each path's CPU per op against the bridge's; whether `orm` beats the bridge everywhere."""
    print("CPU per op against the bridge (1 task / 20 tasks):")
    cheaper = True
    for db in dict.fromkeys(key[0] for key in figures):
        for name in OPS:
            one, many, _ = figures[db, "bridge", name]
            parts = []
            for path in PATHS[1:]:
                p_one, p_many, _ = figures[db, path, name]
                parts.append(f"{path} {p_one / one:.2f}x / {p_many / many:.2f}x")
                cheaper &= path != "orm" or (p_one < one and p_many < many)
            print(f"  {db:<9}{name:<9}{', '.join(parts)} the bridge")
    return cheaper


def _postgres() -> psycopg.Connection[Any] | None:
    try:
        return psycopg.connect(f"{PG_SERVER} dbname=postgres", autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as err:
        print(f"PostgreSQL not reachable ({str(err).strip()}): measuring SQLite only")
        return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.bench_db_path", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 s per cell instead of 5 s")
    parser.add_argument("--smoke", action="store_true", help="0.05 s per cell: that it runs")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds (>= 1)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    seconds = 0.05 if args.smoke else 1.0 if args.quick else 5.0
    print(load_note(), flush=True)
    name = f"nichescope_bench_dbpath_{secrets.token_hex(4)}"
    with tempfile.TemporaryDirectory(prefix="nichescope-bench-") as folder:
        path = Path(folder) / "bench.db"
        dbs = [Db("sqlite", f"sqlite+aiosqlite:///{path}", f"sqlite+pysqlite:///{path}",
                  str(path))]  # fmt: skip
        admin = _postgres()
        try:
            if admin is not None:
                admin.execute(f'CREATE DATABASE "{name}"')
                where = f"postgres@127.0.0.1:5432/{name}"
                raw = f"{PG_SERVER} dbname={name}"
                urls = f"postgresql+asyncpg://{where}", f"postgresql+psycopg://{where}"
                dbs.append(Db("postgres", *urls, raw))
            seeded = [(db, _seed(db)) for db in dbs]
            started = time.monotonic()
            rounds = 1 if args.smoke else max(1, args.rounds)
            figures = trio.run(_measure, seeded, seconds, rounds)
        finally:
            if admin is not None:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                admin.close()
    cheaper = _report(figures)
    print(f"measured in {time.monotonic() - started:.0f} s; sync ORM in threads costs less CPU "
          f"per op than the bridge in every cell: {verdict(cheaper)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
