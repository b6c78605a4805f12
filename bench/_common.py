"""Helpers shared by the engine benchmarks: ports, child processes, RSS, percentiles."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


def peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return (
        f"figures taken under SHARED load on {os.cpu_count()} cores "
        f"(load average {one:.2f} / {five:.2f} at start)"
    )


def spawn(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_http(url: str, seconds: float = 60.0) -> None:
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
    args = ["-m", "api.cli", "simulator", "--port", str(port), "--listings", str(listings)]
    process = spawn(args)
    origin = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{origin}/robots.txt")
    except Exception:
        stop(process)
        raise
    return process, origin
