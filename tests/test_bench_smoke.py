"""Every benchmark runs to its end on today's code, at its smallest size (`--smoke`).

A benchmark is only run by hand (`make bench`), so one that rots (a renamed module, a moved
path of the simulator, a changed dataclass) would go unnoticed until someone needs its figures.
Here each runs as `python -m bench.<name> --smoke`, in its own process as `make bench` runs it
(those that start servers are soak tests, see SERVERS):
small data and windows of a fraction of a second, figures printed but not judged. What fails
is what would stop a real run: an exception, a hard failure the benchmark reports itself
(5xx answers, disagreeing implementations), or a run that does not finish in time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Seconds per benchmark, generous: a busy 2-core machine runs these several times slower than
# an idle one, and a timeout here should mean "stuck", not "slow".
TIMEOUT = 900
# Run by every `make test`: a few seconds of CPU each (one process, no servers).
QUICK = ("bench_analysis", "bench_db_path", "bench_item_pages", "bench_scrapers")
# Soak tests (`make soak` and `make bench-smoke`, both run by CI; not `make test`): each starts
# servers, simulators, worker nodes or a whole service (about 4.5 minutes of one worker on a
# quiet 2-core machine), more than every local `make test` should wait for.
SERVERS = (
    "bench_accuracy",
    "bench_api_load",
    "bench_challenge",
    "bench_cluster",
    "bench_engine",
    "bench_import_memory",
    "bench_notify",
    "bench_shared_feeds",
)
SMOKE = QUICK + SERVERS


def test_every_benchmark_has_a_smoke_run() -> None:
    found = sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py"))
    missing = sorted(set(found) - set(SMOKE))
    assert missing == [], f"benchmarks without a smoke run here: {missing}"


@pytest.mark.parametrize(
    "name", [*QUICK, *(pytest.param(name, marks=pytest.mark.soak) for name in SERVERS)]
)
def test_benchmark_runs_at_its_smallest_size(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{name}", "--smoke"],
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    output = (done.stdout + done.stderr)[-4000:]
    assert done.returncode == 0, f"bench.{name} --smoke exited {done.returncode}:\n{output}"
