"""REST API under load: a realistic read mix against `nichescope serve`, and the framework's
ceiling (a bare Quart-Trio hello world on the same Hypercorn config) measured in the same run.

Run: `python -m bench.bench_api_load [--quick]` (full: about 70 s; `--quick`: about 45 s).

Preparation (SQLite in a temp dir, written straight through the store, not timed): one user
with a browser session, a paused monitor with 20,000 listings (per-state counts kept as polls
would), and a few finished runs with their analyses, produced by the real run path (the
engine scraping the bundled marketplace simulator, then the niche analysis).

Load: 100 clients (httpx under trio, in a separate process, one keep-alive connection each),
closed loop with no think time, for a bounded time. Each request is drawn at random from the
mix: 30% GET /api/dashboard (top niches and recent runs), 40% a random listings page of 50,
10% GET /api/runs, 10% GET /api/runs/{id}, 10% GET /api/analyses/{id}. Then the same 100
clients against the hello-world route. Throughput counts 2xx responses per second of the
phase; latencies are those of 2xx responses, send to last body byte.

Reading the ratio: API throughput / hello-world throughput is the share of the framework's
ceiling the service keeps once it does real work (auth, SQL on the trio-asyncio bridge,
pydantic, JSON); 1.0 would mean the framework is the bottleneck, 0.1 that the service's own
work costs nine times what Quart-Trio and Hypercorn cost per request. The p99 ratio is how
much longer the slowest 1% wait. Both servers and the client share the machine (2 cores
here), so absolute figures move with other load; the ratio, taken seconds apart under the
same conditions, moves less. The CPU line under each phase says who was the limit: a server
near 100% of a core is saturated (Hypercorn runs one process); well below, the client or the
machine's other work was, and the hello-world ceiling (so the ratio's denominator) is low.

Any 5xx (or a dropped connection) is a FAIL: the server's logged tracebacks are printed and
the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import trio
import trio_asyncio
from hypercorn.trio import serve
from quart_trio import QuartTrio

from api.runtime import ServeOptions, hypercorn_config, wait_for_stop_signal
from bench._common import (
    ROOT,
    cpu_seconds,
    free_port,
    load_note,
    percentile,
    process_cpu_seconds,
    seed_account,
    seed_monitor,
    spawn,
    start_simulator,
    stop,
    verdict,
    wait_http,
)
from engine import Engine, MarketplaceSettings, open_marketplace
from store import FINISHED_RUN_STATES, Store, open_store

CLIENTS = 100
LISTINGS = 20_000
PAGE_SIZE = 50
MONITOR = "mon_load"
# Catalogue URLs of the simulator (path and query, items cap), each analysed by one run. The
# whole catalogue comes last: the dashboard shows the newest analysis, and this one has the
# most niches (a few hundred listings; a single category gives a few dozen).
CATALOGUES = (
    ("/catalog?catalog[]=1904", 300),
    ("/catalog?catalog[]=1206", 300),
    ("/catalog?catalog[]=257", 300),
    ("/catalog?order=newest_first", 600),
)
RUNS_SECONDS = 60.0

# (kind, share of requests); the paths of each kind are filled in from the prepared data.
MIX = (
    ("dashboard", 0.30),
    ("listings", 0.40),
    ("runs", 0.10),
    ("run", 0.10),
    ("analysis", 0.10),
)


# -- preparation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    cookie: str
    run_ids: list[str]
    analysis_ids: list[str]
    seconds: float


async def _finished_runs(store: Store, workspace_id: str, origin: str) -> list[str]:
    """Runs of the simulator's catalogue through the engine, each awaited to a final state
    before the next starts (so that their order, and the dashboard's analysis, is fixed).

    The politeness limits are lifted (no rate limit) for the local simulator so that
    preparation stays short. `trio.TooSlowError` after RUNS_SECONDS in all.
    """
    settings = MarketplaceSettings(extra_origins=(origin,), rate=0, concurrency=8)
    run_ids = []
    with trio.fail_after(RUNS_SECONDS):
        async with open_marketplace(settings) as market, Engine(store, market) as engine:
            for i, (catalogue, max_items) in enumerate(CATALOGUES):
                run = await engine.runs.start(
                    run_id=f"run_load{i}", workspace_id=workspace_id, label=f"load {i}",
                    source="url", url=await market.check_url(origin + catalogue),
                    monitor_id=None, max_items=max_items,
                )  # fmt: skip
                while run.state not in FINISHED_RUN_STATES:
                    await trio.sleep(0.05)
                    found = await store.runs.get(run.id, workspace_id)
                    assert found is not None
                    run = found
                run_ids.append(run.id)
    return run_ids


async def _prepare(url: str, key: str, origin: str) -> Prepared:
    """Migrate the database at `url` and fill it; raises if a run ends without an analysis."""
    started = time.monotonic()
    async with trio_asyncio.open_loop(), open_store(url, run_migrations=True) as store:
        workspace_id, cookie = await seed_account(store, key)
        await seed_monitor(store, workspace_id, MONITOR, LISTINGS)
        run_ids = await _finished_runs(store, workspace_id, origin)
        analysis_ids = []
        for run_id in run_ids:
            run = await store.runs.get(run_id, workspace_id)
            assert run is not None
            if run.analysis_id is None:  # the figures would silently lose a kind otherwise
                raise RuntimeError(f"run {run_id} ended {run.state}: {run.error}")
            analysis_ids.append(run.analysis_id)
    return Prepared(cookie, run_ids, analysis_ids, time.monotonic() - started)


# -- hello world (its own process) ------------------------------------------------------------


def _hello(port: int) -> None:
    """A bare Quart-Trio app on Hypercorn's trio worker, configured as `nichescope serve` is."""
    app = QuartTrio(__name__)

    @app.get("/hello")
    async def hello() -> dict[str, str]:
        return {"hello": "world"}

    config = hypercorn_config(ServeOptions(port=port))
    trio.run(lambda: serve(app, config, shutdown_trigger=wait_for_stop_signal))


# -- load client (its own process) ------------------------------------------------------------


async def _client(spec: dict[str, Any]) -> None:
    """Reads the load spec as JSON on stdin (see `_load`), prints the samples as JSON.

    Each simulated client has its own `httpx.AsyncClient` with one connection: one shared
    pool of 100 connections costs the client more CPU than the hello-world server spends
    (httpcore scans every connection of the pool for every request), which would measure
    the client instead of the server.
    """
    mix: list[tuple[str, float, list[str]]] = spec["mix"]
    weights = [share for _, share, _ in mix]
    samples: list[tuple[int, int, float]] = []  # (kind index, status or 0, seconds)
    failures: list[tuple[str, str]] = []  # (path, status or exception name), first ones
    headers = {"Cookie": f"session_token={spec['cookie']}"}
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)

    def new_client() -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=spec["base"], headers=headers, limits=limits, timeout=60)

    async with new_client() as http:  # warm-up: first-request costs stay out of the figures
        for _, _, paths in mix:
            (await http.get(paths[0])).raise_for_status()

    async def worker(seed: int, ready: trio.Event, go: trio.Event) -> None:
        rng = random.Random(seed)
        async with new_client() as http:
            ready.set()
            await go.wait()
            while trio.current_time() < deadline:
                kind = rng.choices(range(len(mix)), weights)[0]
                path = rng.choice(mix[kind][2])
                sent = time.perf_counter()
                try:
                    status = (await http.get(path)).status_code
                    failure = str(status)
                except httpx.HTTPError as err:  # counted as status 0: the run goes on
                    status, failure = 0, type(err).__name__
                samples.append((kind, status, time.perf_counter() - sent))
                if not 200 <= status < 300 and len(failures) < 20:
                    failures.append((path, failure))

    deadline = float("inf")
    go = trio.Event()
    async with trio.open_nursery() as nursery:
        for seed in range(int(spec["concurrency"])):
            ready = trio.Event()
            nursery.start_soon(worker, seed, ready, go)
            await ready.wait()
        # Every client exists before the clock starts (their TLS-free setup is cheap, but
        # creating 100 clients is not free and is no part of the server's work).
        deadline = trio.current_time() + float(spec["duration"])
        began, cpu = time.perf_counter(), cpu_seconds()
        go.set()
    elapsed, cpu = time.perf_counter() - began, cpu_seconds() - cpu
    print(json.dumps({"elapsed": elapsed, "cpu": cpu, "samples": samples, "failures": failures}))


def _load(
    base: str,
    cookie: str,
    duration: float,
    mix: Sequence[tuple[str, float, list[str]]],
    server: subprocess.Popen[bytes],
    clients: int = CLIENTS,
) -> dict[str, Any]:
    """Run the load client; its result (samples, `elapsed`, the client's own `cpu` seconds
    over the timed window) plus `server_cpu`: they share the machine, so the two CPU figures
    say which of them was the limit."""
    spec = {"base": base, "cookie": cookie, "concurrency": clients, "duration": duration,
            "mix": mix}  # fmt: skip
    server_cpu = process_cpu_seconds(server.pid)
    done = subprocess.run(
        [sys.executable, "-m", "bench.bench_api_load", "client"], cwd=ROOT,
        input=json.dumps(spec).encode(), capture_output=True, timeout=duration + 120,
    )  # fmt: skip
    if done.returncode != 0:
        sys.stderr.write(done.stderr.decode()[-3000:])
        raise RuntimeError("the load client crashed")
    result: dict[str, Any] = json.loads(done.stdout)
    # Also counts the client's warm-up requests: a few, against thousands timed.
    result["server_cpu"] = process_cpu_seconds(server.pid) - server_cpu
    return result


# -- figures ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    ok: int
    rate: float  # 2xx per second
    p50_ms: float
    p99_ms: float
    server_errors: int  # 5xx
    other: int  # other non-2xx
    dropped: int  # no response: connection or timeout errors

    def line(self) -> str:
        return (
            f"{self.rate:,.0f} req/s, p50 {self.p50_ms:.0f} ms, p99 {self.p99_ms:.0f} ms, "
            f"{self.ok:,} ok, 5xx {self.server_errors} "
            f"{verdict(self.server_errors == 0, 'FAIL')}, other non-2xx {self.other}"
            + (f", NO RESPONSE {self.dropped} FAIL" if self.dropped else "")
        )


def _figures(samples: Sequence[Sequence[float]], elapsed: float) -> Figures:
    ok = [s[2] for s in samples if 200 <= s[1] < 300]
    return Figures(
        ok=len(ok),
        rate=len(ok) / elapsed,
        p50_ms=percentile(ok, 50) * 1000,
        p99_ms=percentile(ok, 99) * 1000,
        server_errors=sum(1 for s in samples if s[1] >= 500),
        other=sum(1 for s in samples if 0 < s[1] < 200 or 300 <= s[1] < 500),
        dropped=sum(1 for s in samples if s[1] == 0),
    )


def _tracebacks(log: Path, limit: int = 3) -> str:
    """The first `limit` logged errors of the server, tracebacks included."""
    blocks: list[list[str]] = []
    for line in log.read_text(errors="replace").splitlines():
        # Records start with a timestamp: ours "2025-...", Hypercorn's own "[2025-...".
        record = line[:1] == "[" or line[:4].isdigit()
        if record and (" ERROR " in line or "[ERROR]" in line):
            blocks.append([line])
        elif blocks and not record:  # a traceback line of the last error
            blocks[-1].append(line)
    shown = "\n".join("\n".join(block) for block in blocks[:limit])
    return f"{len(blocks)} errors logged by the server; the first ones:\n{shown}"


# -- orchestration ----------------------------------------------------------------------------


def _api_mix(monitor: str, prepared: Prepared) -> list[tuple[str, float, list[str]]]:
    pages = LISTINGS // PAGE_SIZE
    paths = {
        "dashboard": ["/api/dashboard?include_top_niches=true&include_recent_runs=true"],
        "listings": [
            f"/api/monitoring/{monitor}/listings?state=all&page={page}&page_size={PAGE_SIZE}"
            for page in range(1, pages + 1)
        ],
        "runs": ["/api/runs"],
        "run": [f"/api/runs/{run_id}" for run_id in prepared.run_ids],
        "analysis": [f"/api/analyses/{analysis_id}" for analysis_id in prepared.analysis_ids],
    }
    return [(kind, share, paths[kind]) for kind, share in MIX]


def _report(title: str, result: dict[str, Any], kinds: Sequence[str]) -> Figures:
    samples, elapsed = result["samples"], result["elapsed"]
    total = _figures(samples, elapsed)
    print(f"  {title}: {total.line()}", flush=True)
    print(f"    CPU: server {result['server_cpu'] / elapsed:.0%} of a core, load client "
          f"{result['cpu'] / elapsed:.0%}")  # fmt: skip
    if len(kinds) > 1:
        for index, kind in enumerate(kinds):
            of_kind = [s for s in samples if s[0] == index]
            print(f"    {kind:<9} {_figures(of_kind, elapsed).line()}")
    for path, failure in result["failures"][:5]:
        print(f"    failed: GET {path} -> {failure}")
    return total


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 s per phase instead of 20 s")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    duration = 10.0 if args.quick else 20.0
    print(load_note(), flush=True)
    key = secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory(prefix="nichescope-bench-") as name:
        folder = Path(name)
        url = f"sqlite+aiosqlite:///{folder / 'bench.db'}"
        simulator, origin = start_simulator()
        try:
            prepared = trio.run(_prepare, url, key, origin)
        finally:
            stop(simulator)
        print(f"prepared in {prepared.seconds:.0f} s: {LISTINGS:,} listings, "
              f"{len(prepared.run_ids)} finished runs with analyses", flush=True)  # fmt: skip
        log = folder / "server.log"
        api = _measure_api(url, key, prepared, duration, log)
        hello = measure_hello(duration)
    print(
        f"  ratio API / hello world: throughput {api.rate / hello.rate:.2f}x, "
        f"p99 {api.p99_ms / hello.p99_ms:.1f}x (see the module docstring)"
    )
    one, five, _ = os.getloadavg()
    print(f"  load average at the end {one:.2f} / {five:.2f}")
    failed = api.server_errors + api.dropped + hello.server_errors + hello.dropped
    return 1 if failed else 0


def _measure_api(url: str, key: str, prepared: Prepared, duration: float, log: Path) -> Figures:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with log.open("wb") as stderr:
        server = spawn(
            ["-m", "api.cli", "serve", "--port", str(port), "--database-url", url],
            env={"NICHESCOPE_SECRET_KEY": key}, stderr=stderr,
        )  # fmt: skip
        try:
            wait_http(f"{base}/health")
            mix = _api_mix(MONITOR, prepared)
            result = _load(base, prepared.cookie, duration, mix, server)
        finally:
            # Stopped before the hello-world phase, so that it does not share the CPU.
            stop(server)
    kinds = [kind for kind, _, _ in mix]
    title = f"API mix, {CLIENTS} clients, closed loop, {duration:.0f} s"
    figures = _report(title, result, kinds)
    if figures.server_errors or figures.dropped:
        print(_tracebacks(log))
    return figures


def measure_hello(duration: float, clients: int = CLIENTS) -> Figures:
    """The framework's own ceiling: a bare Quart-Trio hello world under `clients` closed-loop
    clients (also the listings bench's baseline, with 50)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = spawn(["-m", "bench.bench_api_load", "hello", str(port)])
    try:
        wait_http(f"{base}/hello")
        result = _load(base, "", duration, [("hello", 1.0, ["/hello"])], server, clients)
    finally:
        stop(server)
    title = f"hello world (bare Quart-Trio, same Hypercorn config), {clients} clients"
    return _report(title, result, ["hello"])


if __name__ == "__main__":
    if sys.argv[1:2] == ["client"]:
        trio.run(_client, json.load(sys.stdin))
    elif sys.argv[1:2] == ["hello"]:
        _hello(int(sys.argv[2]))
    else:
        sys.exit(main())
