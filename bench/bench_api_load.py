"""REST API under load, on SQLite and on PostgreSQL: server CPU per request of each request
kind and a realistic 100-client read mix, each against a bare Quart-Trio hello world on the
same Hypercorn config measured in the same run (the framework's own cost and ceiling).

Run: `python -m bench.bench_api_load [--quick | --smoke] [--sqlite-only]` (full: about 6
min; `--quick`: about 4; `--smoke`: SQLite only, small data, a fraction of a second per
phase, checks that it runs). PostgreSQL is the local server at 127.0.0.1:5432 (user
`postgres`, trust auth): a throwaway database `nichescope_bench_api_<hex>` is created, then
dropped WITH (FORCE); when the server is not reachable the bench says so and measures SQLite
only.

Preparation per database (not timed; SQLite in a temp dir; written straight through the
store): one user with a browser session and a read+write personal access token, a paused
monitor with 20,000 listings (per-state counts kept as polls would), and a few finished runs
with their analyses made by the real run path (the engine scraping the bundled marketplace
simulator, then the niche analysis). PostgreSQL then gets VACUUM ANALYZE.

Phases per database, against one `nichescope serve`; clients are httpx under trio in a
separate process, one keep-alive connection each, closed loop with no think time:
- per kind, 20 clients for 1.5 s (`--quick`) or 3 s per round, three rounds: GET /health (no
  credentials), a run, an analysis, a random listings page of 40-60 with the session cookie, the
  same pages with `Authorization: Bearer <token>` (these two in halves, cookie-bearer-bearer-
  cookie, so that a drift weighs on both alike), one of ten pages of 50 read again and again
  (the service keeps a page until the monitor's next poll: the other listings phases draw from
  thousands of (page, size) pairs so that their reads are first reads), and the dashboard with
  top niches and recent runs;
- the mix, 100 clients for 3.5 s or 7 s per round, three rounds, each request drawn at
  random: 30% dashboard, 40% a listings page, 10% GET /api/runs, 10% a run, 10% an
  analysis (cookie).
The hello world (its own server, started first and left running beside both databases'
servers: an idle server costs nothing) is measured next to every phase, as long and with as
many clients (20 beside a kind, 100 beside the mix), the two in alternated order (the kind
first, then the hello world first in the next pair, and so on). Each ratio is the median of
the per-round ratios, printed with its range.

Reading the figures. CPU ms/req is the server process's CPU time (user + system, all its
threads, from /proc) over a phase divided by the phase's 2xx responses; its ratio to the hello
world's is what the service's own work (auth, SQL, pydantic, JSON) costs per request on top
of Quart-Trio and Hypercorn, largely whatever else the machine runs. SQLite's figures include
the database's work; PostgreSQL's do not (its own processes are not counted). The "server"
column is its CPU as a share of one core: near 100% it was saturated (one process); well
below, the client or the machine's other work was the limit, and CPU per request is then
somewhat higher (fewer requests share each wake-up): a hello world well below 100% flatters
the ratios. The window is exact: every client connects and sends one request, and each kind's
first paths are requested, before the client prints "ready"; the parent then reads the
server's CPU, answers "go", and reads it again as soon as the results arrive, before the
connections close; so neither warm-up nor connection setup is counted. Throughput counts 2xx
per second; latencies are those of 2xx, send to last body byte. The mix's throughput ratio is
the share of the framework's ceiling the service keeps once it does real work; absolute
figures move with the machine's other load (2 cores here), the ratios less.

Targets (PASS/MISS, against the hello world): CPU per request of /health <= 2x, of a run, an
analysis and a listings page <= 3x, of the dashboard <= 4x; the bearer-token listings page
within 10% of the same with a cookie; the mix's throughput >= 0.5x with no 5xx. A MISS leaves
the exit status alone; any 5xx (or dropped connection) is a FAIL: the server's logged
tracebacks are printed and the exit status is 1.
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
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import trio
import trio_asyncio
from hypercorn.trio import serve
from quart_trio import QuartTrio

from api.process.collector import tune_collector
from api.process.serve import ServeOptions, hypercorn_config, wait_for_stop_signal
from bench._api_kinds import HELLO_MIX, Mix, Paired, measure_kinds, print_mix, print_table
from bench._common import (
    ROOT,
    cpu_seconds,
    free_port,
    load_note,
    percentile,
    postgres_database,
    process_cpu_seconds,
    seed_account,
    seed_monitor,
    seed_token,
    spawn,
    start_simulator,
    stop,
    vacuum_analyze,
    verdict,
    wait_http,
)
from bench._fair import alternated
from engine import MarketplaceSettings, open_engine, open_marketplace
from store import FINISHED_RUN_STATES, Store, open_store

CLIENTS = 100
LISTINGS = 20_000
PAGE_SIZE = 50
PAGE_SIZES = range(PAGE_SIZE - 10, PAGE_SIZE + 11)  # see `_paths`
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
WARM_PATHS = 10  # each kind's first paths requested before the window (analyses are cached)

# (kind, share of requests); the paths of each kind are filled in from the prepared data.
MIX = (
    ("dashboard", 0.30),
    ("listings", 0.40),
    ("runs", 0.10),
    ("run", 0.10),
    ("analysis", 0.10),
)


@dataclass(frozen=True)
class Timing:
    kind_seconds: float  # each per-kind CPU phase, per round (the hello world's beside it too)
    mix_seconds: float  # each 100-client phase, per round (the hello world's too)
    rounds: int
    listings: int = LISTINGS  # the monitor's (a multiple of 16)
    catalogues: tuple[tuple[str, int], ...] = CATALOGUES


FULL = Timing(3.0, 7.0, 3)
QUICK = Timing(1.5, 3.5, 3)
# Seconds: that every phase runs, not what it measures.
SMOKE = Timing(0.3, 0.5, 1, listings=1_600, catalogues=(("/catalog?catalog[]=1904", 40),))


# -- preparation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    cookie: str
    token: str
    run_ids: list[str]
    analysis_ids: list[str]
    seconds: float


async def _finished_runs(
    store: Store, workspace_id: str, origin: str, catalogues: Sequence[tuple[str, int]]
) -> list[str]:
    """Runs of the simulator's catalogue through the engine, each awaited to a final state
    before the next starts (so that their order, and the dashboard's analysis, is fixed).

    The politeness limits are lifted (no rate limit) for the local simulator so that
    preparation stays short. `trio.TooSlowError` after RUNS_SECONDS in all.
    """
    settings = MarketplaceSettings(extra_origins=(origin,), rate=0, concurrency=8)
    run_ids = []
    with trio.fail_after(RUNS_SECONDS):
        async with open_marketplace(settings) as market, open_engine(store, market) as engine:
            for i, (catalogue, max_items) in enumerate(catalogues):
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


async def _prepare(url: str, key: str, origin: str, timing: Timing) -> Prepared:
    """Migrate the database at `url` and fill it; raises if a run ends without an analysis."""
    started = time.monotonic()
    async with trio_asyncio.open_loop(), open_store(url, run_migrations=True) as store:
        workspace_id, cookie = await seed_account(store, key)
        token = await seed_token(store, key)
        await seed_monitor(store, workspace_id, MONITOR, timing.listings)
        run_ids = await _finished_runs(store, workspace_id, origin, timing.catalogues)
        analysis_ids = []
        for run_id in run_ids:
            run = await store.runs.get(run_id, workspace_id)
            assert run is not None
            if run.analysis_id is None:  # the figures would silently lose a kind otherwise
                raise RuntimeError(f"run {run_id} ended {run.state}: {run.error}")
            analysis_ids.append(run.analysis_id)
    return Prepared(cookie, token, run_ids, analysis_ids, time.monotonic() - started)


def _prepare_with_simulator(url: str, key: str, timing: Timing) -> Prepared:
    simulator, origin = start_simulator()
    try:
        return trio.run(_prepare, url, key, origin, timing)
    finally:
        stop(simulator)


# -- servers (their own processes) ------------------------------------------------------------


def _hello(port: int) -> None:
    """A bare Quart-Trio app on Hypercorn's trio worker, configured as `nichescope serve` is."""
    app = QuartTrio(__name__)

    @app.get("/hello")
    async def hello() -> dict[str, str]:
        return {"hello": "world"}

    config = hypercorn_config(ServeOptions(port=port))
    tune_collector()  # as `nichescope serve` does
    trio.run(lambda: serve(app, config, shutdown_trigger=wait_for_stop_signal))


@contextmanager
def _serving(
    args: list[str], ready_path: str, env: dict[str, str] | None = None,
    stderr: IO[bytes] | None = None,
) -> Iterator[LoadClient]:  # fmt: skip
    """A server started as `python ARGS --port PORT`, and a load client for it; the server is
    stopped on exit (before the next one starts, so that they do not share the CPU)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = spawn([*args, "--port", str(port)], env=env, stderr=stderr)
    try:
        wait_http(base + ready_path)
        with LoadClient(base, server) as load:
            yield load
    finally:
        stop(server)


# -- load client (its own process) ------------------------------------------------------------


async def _client() -> None:
    """Runs the phases `LoadClient` sends, one JSON spec per line on stdin, each answered
    by "ready" (clients connected and warmed up), then, once stdin says "go", the timed
    samples as one JSON line; the connections close when stdin says "close".

    Each simulated client has its own `httpx.AsyncClient` with one connection: one shared
    pool of 100 connections costs the client more CPU than the hello-world server spends
    (httpcore scans every connection of the pool for every request), which would measure
    the client instead of the server.
    """
    stdin = trio.wrap_file(sys.stdin)
    while line := await stdin.readline():
        await _phase(json.loads(line), stdin)


async def _phase(spec: dict[str, Any], stdin: Any) -> None:
    mix: list[tuple[str, float, list[str]]] = spec["mix"]
    weights = [share for _, share, _ in mix]
    samples: list[tuple[int, int, float]] = []  # (kind index, status or 0, seconds)
    failures: list[tuple[str, str]] = []  # (path, status or exception name), first ones
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)

    def new_client() -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=spec["base"], headers=spec["headers"], limits=limits, timeout=60
        )

    async with new_client() as http:  # warm-up: first-request costs stay out of the figures
        for _, _, paths in mix:
            for path in paths[:WARM_PATHS]:
                (await http.get(path)).raise_for_status()

    async def worker(
        seed: int, http: httpx.AsyncClient, task_status: trio.TaskStatus[None]
    ) -> None:
        rng = random.Random(seed)
        await http.get(mix[seed % len(mix)][2][0])  # connects: its setup stays out, too
        task_status.started()
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
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(new_client()) for _ in range(spec["clients"])]
        async with trio.open_nursery() as nursery:
            for seed, http in enumerate(clients):
                await nursery.start(worker, seed, http)
            print("ready", flush=True)
            if (await stdin.readline()).strip() != "go":
                raise RuntimeError("expected go")
            deadline = trio.current_time() + float(spec["duration"])
            began, cpu = time.perf_counter(), cpu_seconds()
            go.set()
        elapsed, cpu = time.perf_counter() - began, cpu_seconds() - cpu
        print(json.dumps({"elapsed": elapsed, "cpu": cpu, "samples": samples,
                          "failures": failures}), flush=True)  # fmt: skip
        await stdin.readline()  # "close": the parent has read the server's CPU


class LoadClient:
    """The load client process of one server (`python -m bench.bench_api_load client`),
    running one phase at a time, so that its start-up (imports) is paid once per server."""

    def __init__(self, base: str, server: subprocess.Popen[bytes]) -> None:
        self._base, self._server = base, server
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115  # closed by __exit__
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.bench_api_load", "client"], cwd=ROOT, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
        )  # fmt: skip

    def __enter__(self) -> LoadClient:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()  # its end of input: the client exits
        try:
            self._process.wait(30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(5)
        self._stderr.close()

    def run(
        self, headers: dict[str, str], clients: int, duration: float, mix: Mix
    ) -> dict[str, Any]:
        """One phase's result (samples, `elapsed`, the client's own `cpu` seconds over the
        timed window) plus `server_cpu`, the server's CPU seconds over the same window: they
        share the machine, so the two CPU figures say which of them was the limit."""
        spec = {"base": self._base, "headers": headers, "clients": clients, "duration": duration,
                "mix": mix}  # fmt: skip
        # Generous: on a 2-core machine with a load average of 20, 100 clients took minutes to
        # connect and warm up, and a watchdog kill reads as a crash.
        watchdog = threading.Timer(duration + 600, self._process.kill)
        watchdog.start()
        try:
            self._send(json.dumps(spec))
            if self._receive() != "ready":
                raise RuntimeError("the load client did not get ready")
            server_cpu = process_cpu_seconds(self._server.pid)
            self._send("go")
            result: dict[str, Any] = json.loads(self._receive())
            result["server_cpu"] = process_cpu_seconds(self._server.pid) - server_cpu
            self._send("close")
        finally:
            watchdog.cancel()
        return result

    def _send(self, line: str) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(line + "\n")
        self._process.stdin.flush()

    def _receive(self) -> str:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._stderr.seek(0)
            sys.stderr.write(self._stderr.read().decode(errors="replace")[-3000:])
            raise RuntimeError("the load client crashed")
        return line.strip()


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


# -- orchestration ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    kinds: list[Paired]  # per kind, with the hello world measured beside it
    mix: list[tuple[Figures, Figures]]  # per round: the mix, the hello world's 100 clients
    bad: int  # 5xx and dropped responses over every phase (the hello world's included)


def _paths(monitor: str, prepared: Prepared, listings: int) -> dict[str, list[str]]:
    return {
        "health": ["/health"],
        "dashboard": ["/api/dashboard?include_top_niches=true&include_recent_runs=true"],
        # Page sizes around PAGE_SIZE: the service keeps a page read once until the
        # monitor's next poll, and this monitor is paused, so 400 pages of one size would
        # soon all be answered from memory. Thousands of (page, size) pairs keep these reads
        # first reads, as on a monitor that polls; "listings (again)" measures the others.
        "listings": [
            f"/api/monitoring/{monitor}/listings?state=all&page={page}&page_size={size}"
            for size in PAGE_SIZES
            for page in range(1, listings // size + 1)
        ],
        "listings again": [
            f"/api/monitoring/{monitor}/listings?state=all&page={page}&page_size={PAGE_SIZE}"
            for page in range(1, 11)
        ],
        "runs": ["/api/runs"],
        "run": [f"/api/runs/{run_id}" for run_id in prepared.run_ids],
        "analysis": [f"/api/analyses/{analysis_id}" for analysis_id in prepared.analysis_ids],
    }


def _merged(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """`LoadClient.run` results of several windows as one (samples pooled, times summed)."""
    return {
        "samples": [x for r in results for x in r["samples"]],
        "failures": [x for r in results for x in r["failures"]],
        **{key: sum(r[key] for r in results) for key in ("elapsed", "cpu", "server_cpu")},
    }


def _measure_mix(
    load: LoadClient, hello: LoadClient, cookie: dict[str, str], mix: Mix, timing: Timing
) -> tuple[list[tuple[Figures, Figures]], int]:
    """The mix and the hello world's ceiling (CLIENTS each), alternated round by round:
    (per-round figures of both, 5xx and dropped responses)."""
    ours, theirs = alternated(
        lambda: load.run(cookie, CLIENTS, timing.mix_seconds, mix),
        lambda: hello.run({}, CLIENTS, timing.mix_seconds, HELLO_MIX),
        timing.rounds,
    )
    spans = f"{timing.rounds} x {timing.mix_seconds:g} s"
    figures = _report(f"mix, {CLIENTS} clients, closed loop, {spans}", _merged(ours),
                      [kind for kind, _, _ in mix])  # fmt: skip
    ceiling = _report(f"{HELLO_TITLE}, {CLIENTS} clients, {spans}", _merged(theirs), ["hello"])
    rounds = [(_figures(a["samples"], a["elapsed"]), _figures(b["samples"], b["elapsed"]))
              for a, b in zip(ours, theirs, strict=True)]  # fmt: skip
    bad = sum(f.server_errors + f.dropped for f in (figures, ceiling))
    return rounds, bad


def _measure_database(
    database: str, url: str, key: str, timing: Timing, log: Path, hello: LoadClient
) -> Measured:
    prepared = _prepare_with_simulator(url, key, timing)
    if url.startswith("postgresql"):
        vacuum_analyze(url)
    print(f"{database}: prepared in {prepared.seconds:.0f} s: {timing.listings:,} listings, "
          f"{len(prepared.run_ids)} finished runs with analyses", flush=True)  # fmt: skip
    paths = _paths(MONITOR, prepared, timing.listings)
    credentials = {
        "none": {},
        "cookie": {"Cookie": f"session_token={prepared.cookie}"},
        "bearer": {"Authorization": f"Bearer {prepared.token}"},
    }
    args = ["-m", "api.process.cli", "serve", "--database-url", url]
    env = {"NICHESCOPE_SECRET_KEY": key}
    with log.open("wb") as stderr, _serving(args, "/health", env, stderr) as load:
        kinds = measure_kinds(load, hello, paths, credentials, timing.kind_seconds, timing.rounds)
        mix = [(kind, share, paths[kind]) for kind, share in MIX]
        rounds, bad = _measure_mix(load, hello, credentials["cookie"], mix, timing)
    bad += sum(p.phase.bad + p.hello.bad for p in kinds)
    if bad:
        print(_tracebacks(log))
    return Measured(kinds, rounds, bad)


HELLO_ARGS = ["-m", "bench.bench_api_load", "hello"]
HELLO_TITLE = "hello world (bare Quart-Trio, same Hypercorn config)"


def measure_hello(duration: float, clients: int = CLIENTS) -> Figures:
    """The framework's own ceiling: a bare Quart-Trio hello world under `clients` closed-loop
    clients (also the listings bench's baseline, with 50)."""
    with _serving(HELLO_ARGS, "/hello") as load:
        result = load.run({}, clients, duration, HELLO_MIX)
    return _report(f"{HELLO_TITLE}, {clients} clients", result, ["hello"])


def _verdicts(database: str, measured: Measured) -> None:
    print_table(database, measured.kinds)
    print_mix(database, measured.mix, measured.bad)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="phases half as long")
    parser.add_argument("--smoke", action="store_true", help="seconds per database, not judged")
    parser.add_argument("--sqlite-only", action="store_true", help="skip PostgreSQL")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    timing = SMOKE if args.smoke else QUICK if args.quick else FULL
    started = time.monotonic()
    print(load_note(), flush=True)
    key = secrets.token_urlsafe(32)
    bad = 0
    # The hello world serves beside both databases' servers (an idle server costs nothing):
    # each kind and the mix are measured next to it, alternated, as many times.
    with (
        tempfile.TemporaryDirectory(prefix="nichescope-bench-") as name,
        _serving(HELLO_ARGS, "/hello") as hello,
    ):
        folder = Path(name)
        url = f"sqlite+aiosqlite:///{folder / 'bench.db'}"
        log = folder / "server-sqlite.log"
        sqlite = _measure_database("SQLite", url, key, timing, log, hello)
        _verdicts("SQLite", sqlite)
        bad += sqlite.bad
        if args.sqlite_only or args.smoke:
            print("PostgreSQL: skipped")
        else:
            with postgres_database("nichescope_bench_api") as pg_url:
                if pg_url is not None:
                    log = folder / "server-postgres.log"
                    postgres = _measure_database("PostgreSQL", pg_url, key, timing, log, hello)
                    _verdicts("PostgreSQL", postgres)
                    bad += postgres.bad
    one, five, _ = os.getloadavg()
    print(f"load average at the end {one:.2f} / {five:.2f}; "
          f"{time.monotonic() - started:.0f} s in all")  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["client"]:
        trio.run(_client)
    elif sys.argv[1:2] == ["hello"]:
        _hello(int(sys.argv[3]))  # hello --port PORT
    else:
        sys.exit(main())
