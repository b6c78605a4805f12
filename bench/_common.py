"""Helpers shared by the benchmarks: ports, child processes, RSS, percentiles, throwaway
PostgreSQL databases, and seed data (a signed-in user, their access token, a monitor with many
listings) written straight through the store."""

from __future__ import annotations

import os
import resource
import secrets
import socket
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import httpx
import psycopg
from psycopg import sql
from sqlalchemy import insert, text

from api.http.security import TokenHasher, new_access_token, new_id
from store import NewAccessToken, NewUser, Store
from store.market.models import SiteListing
from store.market.site_listings import DESCRIBED, digest
from store.monitors.models import Monitor, MonitorListing, Poll

ROOT = Path(__file__).resolve().parents[1]
PG_SERVER = "host=127.0.0.1 port=5432 user=postgres"  # the local server, trust auth


# Ports a server drawn by `free_port` may take: outside the kernel's ephemeral range, from
# which both `bind(0)` and every outgoing connection take their local ports. A port drawn
# there and bound a moment later by a child process could meanwhile be any connection's
# local port (a CI run failed so); a port outside it is only ever taken by a server.
_LOWEST_PORT = 20_000
_WIDE_ENOUGH = 2_000


def free_port() -> int:
    """A loopback port nobody is listening on, outside the ephemeral range (see above), for
    a server started a moment later; drawn at random, so two tests drawing at once collide
    once in thousands of draws, and then the second one's server fails to start."""
    low, high = server_ports()
    for _ in range(200):
        # Not `random`: a test that seeds it would make every worker draw the same ports.
        port = low + secrets.randbelow(high - low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:  # every draw taken: let the kernel choose
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_ports() -> tuple[int, int]:
    """The ports `free_port` draws from, [low, high): below the ephemeral range, else above
    it, whichever is wide enough; the whole range above 20,000 (with a warning) when
    neither is, or when the system does not say (no Linux `/proc`)."""
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        ephemeral_low, ephemeral_high = int(text[0]), int(text[1])
    except (OSError, ValueError, IndexError):
        return _LOWEST_PORT, 65_536
    if ephemeral_low - _LOWEST_PORT >= _WIDE_ENOUGH:
        return _LOWEST_PORT, ephemeral_low
    if 65_535 - ephemeral_high >= _WIDE_ENOUGH:
        return ephemeral_high + 1, 65_536
    warnings.warn(
        f"the ephemeral ports ({ephemeral_low}-{ephemeral_high}) leave no range for test "
        "servers: a port drawn may be taken by a connection before its server binds it",
        stacklevel=2,
    )
    return _LOWEST_PORT, 65_536


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of `values`; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def rss_kib(pid: int | str = "self") -> int:
    """Current resident set size of a process, in KiB (from /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def peak_rss_kib(pid: int | str = "self") -> int:
    """Peak resident set size of a process's memory since it started (its exec), in KiB.

    Read from /proc (VmHWM), not `getrusage`: Linux carries a parent's `ru_maxrss` into a
    child across fork and exec, so under `python -m bench`, whose earlier benchmarks grew the
    parent to gigabytes, every child reported the parent's peak as its own."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time a live process has used so far (from /proc)."""
    # Fields 14 and 15 of /proc/PID/stat, counted after the parenthesised command name.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of every core since boot (from /proc/stat): the share of the
    machine busy over an interval is the ratio of the two differences."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal
    busy = total - fields[3] - fields[4]
    tick = os.sysconf("SC_CLK_TCK")
    return busy / tick, total / tick


def verdict(ok: bool, missed: str = "MISS") -> str:
    """`PASS`, or `missed` (a target missed is `MISS`; a hard failure can say `FAIL`)."""
    return "PASS" if ok else missed


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return (
        f"figures taken under SHARED load on {os.cpu_count()} cores "
        f"(load average {one:.2f} / {five:.2f} at start)"
    )


def spawn(
    args: list[str], env: dict[str, str] | None = None, stderr: IO[bytes] | None = None
) -> subprocess.Popen[bytes]:
    """`python ARGS` from the repository root; its stderr goes to `stderr` (a file, so that a
    server's tracebacks can be shown afterwards) or nowhere."""
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=stderr if stderr is not None else subprocess.DEVNULL,
    )


def wait_http(url: str, seconds: float = 180.0) -> None:
    """Until `url` answers: a server's start-up (its imports) took over a minute on 2 cores
    with a load average of 15."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def start_simulator(listings: int = 600) -> tuple[subprocess.Popen[bytes], str]:
    """The marketplace simulator in its own process (its CPU stays off the measured one)."""
    port = free_port()
    args = ["-m", "api.process.cli", "simulator", "--port", str(port), "--listings", str(listings)]
    process = spawn(args)
    origin = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{origin}/robots.txt")
    except Exception:
        stop(process)
        raise
    return process, origin


@contextmanager
def postgres_database(prefix: str) -> Iterator[str | None]:
    """A throwaway database `PREFIX_<hex>` on the local PostgreSQL server (PG_SERVER), as the
    service's URL, dropped WITH (FORCE) on exit; None, and a line saying so, when the server
    is not reachable."""
    name = f"{prefix}_{secrets.token_hex(6)}"
    try:
        with psycopg.connect(f"{PG_SERVER} dbname=postgres", autocommit=True,
                             connect_timeout=3) as admin:  # fmt: skip
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.OperationalError as err:
        reason = str(err).strip().splitlines()[0]
        print(f"PostgreSQL not reachable at 127.0.0.1:5432 ({reason}): skipped", flush=True)
        yield None
        return
    try:
        yield f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(f"{PG_SERVER} dbname=postgres", autocommit=True) as admin:
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            admin.execute(drop.format(sql.Identifier(name)))


def vacuum_analyze(url: str) -> None:
    """VACUUM ANALYZE a database of `postgres_database` freshly loaded: the statistics
    autovacuum would have by then."""
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(f"{PG_SERVER} dbname={name}", autocommit=True) as db:
        db.execute("VACUUM ANALYZE")


# -- seed data, written straight through the store ------------------------------------------

SEED_BATCH = 20_000
DOUBLINGS = 16  # n / 16 listings bound from Python, then doubled four times in SQL


async def seed_account(store: Store, key: str, suffix: str = "") -> tuple[str, str]:
    """A user with its workspace and a day-long browser session: (workspace id, cookie).

    `key` must be the server's NICHESCOPE_SECRET_KEY: the session is stored as its hash.
    Sessions are cached in memory by the server, so each request costs its own work and not
    an auth write.
    """
    cookie = secrets.token_urlsafe(32)
    user = await store.create_user(NewUser(
        user_id=f"usr_bench{suffix}", workspace_id=f"wsp_bench{suffix}",
        email=f"bench{suffix}@example.test",
        name="bench", password_hash=None,
    ))  # fmt: skip
    await store.add_session(
        token_hash=TokenHasher(key).digest(cookie), user_id=user.id,
        expires_at=store.clock() + timedelta(days=1),
    )  # fmt: skip
    return user.workspace_id, cookie


async def seed_token(
    store: Store, key: str, suffix: str = "", scopes: tuple[str, ...] = ("read", "write")
) -> str:
    """A personal access token of the user `seed_account` made with the same `suffix`, built
    as `mint_access_token` builds one: its plaintext, for `Authorization: Bearer <token>`.

    `key` must be the server's NICHESCOPE_SECRET_KEY: the token is stored as its hash.
    """
    token = new_access_token()
    await store.add_access_token(NewAccessToken(
        token_id=new_id("key"), user_id=f"usr_bench{suffix}", workspace_id=f"wsp_bench{suffix}",
        label=f"bench{suffix}", scopes=scopes, token_hash=TokenHasher(key).digest(token),
    ))  # fmt: skip
    return token


async def seed_monitor(store: Store, workspace_id: str, monitor_id: str, n: int) -> float:
    """A paused monitor with 100 polls and `n` listings (n a multiple of 16), per-state counts
    kept as `record_poll` would; returns the seconds spent loading the listings."""
    now = store.clock()

    def monitor(db: Any) -> None:
        db.execute(insert(Monitor), [dict(
            id=monitor_id, workspace_id=workspace_id, url="https://x.invalid/catalog",
            status="paused", interval_seconds=3600, page_cap=5, created_at=now,
            bootstrapped_at=now, last_poll_at=now, next_poll_at=None, consecutive_errors=0,
            total_errors=0, polls=100)])  # fmt: skip
        db.execute(insert(Poll), [dict(
            id=f"poll_{uuid.uuid4().hex}", monitor_id=monitor_id,
            started_at=now - timedelta(hours=i), finished_at=now - timedelta(hours=i),
            pages=5, items=480, new=10, changed=3, confirmed=2, duration_ms=900, error=None)
            for i in range(100)])  # fmt: skip

    await store.unit(monitor)
    started = time.monotonic()
    states = ("open", "open", "open", "sold", "reserved", "deleted")
    base = n // DOUBLINGS
    for start in range(0, base, SEED_BATCH):
        rows = [dict(
            monitor_id=monitor_id, item_id=1_000_000_000 + i,
            title=f"Levi's 501 jeans W32 L34 number {i}", brand="Levi's", size="M",
            condition="Very good", category_id=1904, price=Decimal(10 + i % 90),
            currency="EUR", favourites=i % 40, views=i % 400, seller_id=500_000 + i % 9999,
            url=f"https://x.invalid/items/{1_000_000_000 + i}-levis-501",
            photo_url=f"https://x.invalid/photos/{i}.jpg",
            listed_at=now - timedelta(days=30), first_seen_at=now - timedelta(days=29),
            last_seen_at=now, state=states[i % 6], state_changed_at=now, in_feed=i % 6 < 3)
            for i in range(start, min(base, start + SEED_BATCH))]  # fmt: skip

        def load(db: Any, rows: list[dict[str, Any]] = rows) -> None:
            _load_listings(db, rows, SITE)

        await store.unit(load)
    # Doubled inside the database: rows copied with shifted item ids (`url` keeps the
    # original id), which loads far faster than binding every row in Python.
    copied = base
    while copied < n:

        def double(db: Any, shift: int = copied) -> None:
            # Version ids follow item ids (`_load_listings`), so both shift together.
            for table, key, value in (("site_listings", "site", SITE),
                                      ("monitor_listings", "monitor_id", monitor_id)):  # fmt: skip
                columns = [c.name for c in _TABLES[table].columns]
                moved = ("item_id", "id", "description_id")
                shifted = ", ".join(f"{c} + :shift" if c in moved else c for c in columns)
                db.execute(text(
                    f"INSERT INTO {table} ({', '.join(columns)}) SELECT {shifted} "
                    f"FROM {table} WHERE {key} = :k AND item_id < :top"
                ), {"shift": shift, "k": value, "top": 1_000_000_000 + shift})  # fmt: skip

        await store.unit(double)
        copied *= 2

    def count(db: Any) -> None:  # what `record_poll` would have kept
        for state in ("open", "reserved", "sold", "deleted"):
            recount = text(
                f"UPDATE monitors SET {state}_count = (SELECT count(*) FROM listings "
                "WHERE monitor_id = :m AND state = :s) WHERE id = :m"
            )
            db.execute(recount, {"m": monitor_id, "s": state})
        if db.get_bind().dialect.name == "postgresql":  # the version ids were given
            db.execute(text("SELECT setval(pg_get_serial_sequence('site_listings', 'id'), "
                            "(SELECT max(id) FROM site_listings))"))  # fmt: skip

    await store.unit(count)
    return time.monotonic() - started


SITE = "https://x.invalid"  # the seeded monitors' site (`site_of` their URL)
_TABLES = {"monitor_listings": MonitorListing.__table__, "site_listings": SiteListing.__table__}


def _load_listings(db: Any, rows: list[dict[str, Any]], site: str) -> None:
    """Rows of the `listings` view's shape, written as `record_poll` writes them: the
    monitor's side, and one version of the site's description each (its id follows the
    item id, for the doubling's sake)."""
    described = [{name: row.get(name) for name in DESCRIBED} for row in rows]
    db.execute(insert(SiteListing), [
        {"id": row["item_id"] - 999_999_999, "site": site, "item_id": row["item_id"],
         "digest": digest(description)} | description
        for row, description in zip(rows, described, strict=True)
    ])  # fmt: skip
    db.execute(insert(MonitorListing), [
        {k: v for k, v in row.items() if k not in DESCRIBED}
        | {"description_id": row["item_id"] - 999_999_999}
        for row in rows
    ])  # fmt: skip


def spawn_announcing(
    module_args: list[str], env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """`python -m MODULE ARGS...` and the origin it prints on its first line once it
    listens; `RuntimeError` if it dies first (its traceback is on stderr)."""
    process = subprocess.Popen(
        [sys.executable, "-m", *module_args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
    )
    stdout: IO[bytes] | None = process.stdout
    assert stdout is not None
    line = stdout.readline().decode().strip()  # "" if it died
    if not line.startswith("http://"):
        stop(process)
        raise RuntimeError(f"{' '.join(module_args[:2])} did not start")
    return process, line
