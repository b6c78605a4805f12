"""Section 3/4 of `bench_engine`: listings pages and export of a 1,000,000-listing monitor.

The service runs as `nichescope serve` in a subprocess; load comes from httpx in another
subprocess (`python -m bench._listings_bench client ...`), so neither shares the server's
interpreter. Clients authenticate with a session cookie (the browser path: sessions are
cached in memory, so each request costs the listings query and not an auth write).
"""

from __future__ import annotations

import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import trio
import trio_asyncio

from bench._common import (
    DOUBLINGS,
    ROOT,
    free_port,
    percentile,
    rss_kib,
    seed_account,
    seed_monitor,
    spawn,
    stop,
    verdict,
    wait_http,
)
from bench._fair import alternated, ratios, spread
from bench.bench_api_load import measure_hello
from store import open_store

PG_ADMIN = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-q", "-c"]
MONITOR = "mon_big"


async def _prepare(url: str, n: int, key: str) -> tuple[str, str, float]:
    """Migrate, create a user, a session and a monitor, bulk-load `n` listings."""
    async with trio_asyncio.open_loop(), open_store(url, run_migrations=True) as store:
        workspace_id, cookie = await seed_account(store, key)
        seconds = await seed_monitor(store, workspace_id, MONITOR, n)
        return MONITOR, cookie, seconds


# -- load client (its own process) ------------------------------------------------------------


async def _client(
    base: str, monitor: str, cookie: str, concurrency: int, duration: float,
    first_page: int, last_page: int, think: float,
) -> None:  # fmt: skip
    latencies: list[float] = []
    errors: list[str] = []
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"Cookie": f"session_token={cookie}"}
    path = f"/api/monitoring/{monitor}/listings"
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=60) as http:
        await http.get(path, params={"state": "all", "page": 1, "page_size": 50})  # warm-up
        deadline = trio.current_time() + duration
        began = time.perf_counter()

        async def worker(seed: int) -> None:
            rng = random.Random(seed)
            if think:  # users arrive spread over one think time, not all in the same instant
                await trio.sleep(rng.uniform(0, think))
            while trio.current_time() < deadline:
                page = rng.randint(first_page, last_page)
                sent = time.perf_counter()
                try:
                    response = await http.get(
                        path, params={"state": "all", "page": page, "page_size": 50}
                    )
                except httpx.HTTPError as err:  # counted, not fatal: the run goes on
                    errors.append(type(err).__name__)
                    continue
                if response.status_code == 200:
                    latencies.append(time.perf_counter() - sent)
                else:
                    errors.append(str(response.status_code))
                if think:
                    await trio.sleep(rng.expovariate(1 / think))

        async with trio.open_nursery() as nursery:
            for seed in range(concurrency):
                nursery.start_soon(worker, seed)
        elapsed = time.perf_counter() - began
    print(json.dumps({"latencies": latencies, "errors": errors, "elapsed": elapsed}))


def _load(base: str, monitor: str, cookie: str, concurrency: int, duration: float,
          pages: tuple[int, int], think: float = 0.0) -> dict[str, Any]:  # fmt: skip
    args = [sys.executable, "-m", "bench._listings_bench", "client", base, monitor, cookie,
            str(concurrency), str(duration), str(pages[0]), str(pages[1]), str(think)]  # fmt: skip
    done = subprocess.run(args, cwd=ROOT, capture_output=True, timeout=duration + 120)
    if done.returncode != 0:
        sys.stderr.write(done.stderr.decode()[-3000:])
        return {"latencies": [], "errors": ["client crashed"], "elapsed": duration}
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _describe(result: dict[str, Any]) -> tuple[float, float, str]:
    lat = result["latencies"]
    p50, p99 = percentile(lat, 50) * 1000, percentile(lat, 99) * 1000
    kinds = sorted(set(result["errors"]))
    errors = f", {len(result['errors'])} errors {kinds}" if result["errors"] else ""
    rate = len(lat) / result["elapsed"]
    return p50, p99, f"p50 {p50:.0f} ms, p99 {p99:.0f} ms, {rate:.0f} req/s{errors}"


# -- export -----------------------------------------------------------------------------------


async def _export(base: str, monitor: str, cookie: str, pid: int, cap: float) -> dict[str, float]:
    baseline = rss_kib(pid)
    peak = baseline
    got = 0
    complete = False

    async def sample() -> None:
        nonlocal peak
        while True:
            peak = max(peak, rss_kib(pid))
            await trio.sleep(0.02)

    headers = {"Cookie": f"session_token={cookie}"}
    began = time.perf_counter()
    client = httpx.AsyncClient(base_url=base, headers=headers, timeout=120)
    async with client as http, trio.open_nursery() as nursery:
        nursery.start_soon(sample)
        with trio.move_on_after(cap):
            try:
                async with http.stream("GET", f"/api/monitoring/{monitor}/export") as response:
                    response.raise_for_status()
                    tail = b""
                    async for chunk in response.aiter_raw():
                        got += len(chunk)
                        tail = (tail + chunk)[-64:]
                    complete = tail.endswith(b"]}")
            except httpx.HTTPError as err:  # reported as a broken export, not a crash
                print(f"  export BROKEN after {got / 1e6:.0f} MB: {type(err).__name__}: {err}")
        nursery.cancel_scope.cancel()
    return {"baseline": baseline, "peak": peak, "bytes": got,
            "seconds": time.perf_counter() - began, "complete": float(complete)}  # fmt: skip


# -- orchestration ----------------------------------------------------------------------------


def run_listings(backend: str, size: str) -> None:
    """The listings section on `backend` at `size` ("full", "quick" or "smoke")."""
    n = int(os.environ.get("BENCH_LISTINGS_N", "3200" if size == "smoke" else "1000000"))
    key = secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory() as folder:
        if backend == "sqlite":
            url = f"sqlite+aiosqlite:///{folder}/bench.db"
        else:
            name = f"nichescope_bench_{uuid.uuid4().hex[:12]}"
            subprocess.run([*PG_ADMIN, f"CREATE DATABASE {name}"], check=True, timeout=60)
            url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
        try:
            _measure(backend, url, n, key, size)
        finally:
            if backend != "sqlite":
                subprocess.run([*PG_ADMIN, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"],
                               check=False, timeout=60)  # fmt: skip


def _measure(backend: str, url: str, n: int, key: str, size: str) -> None:
    monitor, cookie, load_seconds = trio.run(_prepare, url, n, key)
    if backend == "postgres":  # fresh statistics, as autovacuum would have them
        name = url.rsplit("/", 1)[1]
        subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", name, "-q", "-c",
                        "VACUUM ANALYZE listings"], check=True, timeout=300)  # fmt: skip
    print(f"{backend}: {n:,} listings bulk-loaded ({n // DOUBLINGS:,} by SQLAlchemy Core "
          f"executemany, then doubled 4x by INSERT ... SELECT) in {load_seconds:.0f} s = "
          f"{n / load_seconds:,.0f} rows/s")  # fmt: skip
    port = free_port()
    server = spawn(["-m", "api.process.cli", "serve", "--port", str(port), "--database-url", url],
                   env={"NICHESCOPE_SECRET_KEY": key})  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/health")
        pages = n // 50
        span = {"smoke": 1, "quick": 10}.get(size, 20)
        shallow = _load(base, monitor, cookie, 1, span / 2, (1, 10))
        deep = _load(base, monitor, cookie, 1, span / 2, (pages - pages // 10, pages))
        print(f"  1 client, pages 1-10: {_describe(shallow)[2]}; deepest 10% of pages: "
              f"{_describe(deep)[2]}", flush=True)  # fmt: skip
        # The same closed loop against a bare hello world, alternated with it (A B, B A, A B):
        # the framework's own ceiling on this machine, which no listings page can beat.
        rounds = 1 if size == "smoke" else 3

        def crowd() -> tuple[float, str]:  # (p99 in ms, how it went)
            _, tail, text = _describe(_load(base, monitor, cookie, 50, span, (1, pages)))
            return tail, text

        def hello() -> tuple[float, str]:
            return measure_hello(span, clients=50).p99_ms, ""

        crowds, hello_runs = alternated(crowd, hello, rounds)
        hellos = [tail for tail, _ in hello_runs]
        p99s = [tail for tail, _ in crowds]
        p99, text = sorted(crowds)[len(crowds) // 2]
        print(f"  50 concurrent clients, closed loop (no think time), uniform random page of "
              f"{pages:,}, {span} s, {rounds} rounds: {text} (the median "
              f"round; target p99 < 50 ms) {verdict(p99 < 50)}", flush=True)  # fmt: skip
        print(f"    closed-loop p99 {spread(ratios(p99s, hellos))}x the hello world's "
              f"({spread(hellos, 0)} ms), per round", flush=True)  # fmt: skip
        users = _load(base, monitor, cookie, 50, span, (1, pages), think=1.0)
        _, p99, text = _describe(users)
        print(f"  50 concurrent clients with ~1 s think time (open-ish load), {span} s: {text} "
              f"(target p99 < 50 ms) {verdict(p99 < 50)}", flush=True)  # fmt: skip
        cap = {"smoke": 5.0, "quick": 60.0}.get(size, 240.0)
        result = trio.run(_export, base, monitor, cookie, server.pid, cap)
        grown = (result["peak"] - result["baseline"]) / 1024
        mb = result["bytes"] / 1e6
        whole = "whole document" if result["complete"] else f"STOPPED after {cap:.0f} s (partial)"
        print(f"  export ({whole}): {mb:,.0f} MB in {result['seconds']:.0f} s = "
              f"{mb / result['seconds']:.1f} MB/s; server RSS {result['baseline'] / 1024:.0f} MiB "
              f"before, peak growth {grown:.1f} MiB (target < 100 MB) "
              f"{verdict(grown * 1.048576 < 100)}")  # fmt: skip
    finally:
        stop(server)


if __name__ == "__main__" and sys.argv[1:2] == ["client"]:
    a = sys.argv[2:]
    trio.run(_client, a[0], a[1], a[2], int(a[3]), float(a[4]), int(a[5]), int(a[6]), float(a[7]))
