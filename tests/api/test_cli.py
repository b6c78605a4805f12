"""The `nichescope` command as an operator runs it: migrate, serve, stop on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench._common import free_port, server_ports

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, database: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICHESCOPE_")}
    env.update(
        NICHESCOPE_DATABASE_URL=f"sqlite+aiosqlite:///{database}",
        NICHESCOPE_OUTBOX_DIR=str(tmp_path / "outbox"),
        NICHESCOPE_COOKIE_SECURE="0",
    )
    return env


@contextmanager
def _serving(*args: str, env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """`api.process.cli` run with `args` in a child process (its output piped, as text),
    killed at the end if it is still running."""
    process = subprocess.Popen(
        [sys.executable, "-m", "api.process.cli", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_migrate_creates_the_schema(tmp_path: Path) -> None:
    database = tmp_path / "db" / "migrated.db"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "api.process.cli",
            "migrate",
            "--database-url",
            f"sqlite+aiosqlite:///{database}",
        ],
        cwd=ROOT,
        env=_env(tmp_path, tmp_path / "unused.db"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    tables = {row[0] for row in sqlite3.connect(database).execute("SELECT name FROM sqlite_master")}
    assert {"users", "workspaces", "sessions", "password_resets", "access_tokens"} <= tables


def test_bad_configuration_is_a_clear_error(tmp_path: Path) -> None:
    env = _env(tmp_path, tmp_path / "x.db") | {"NICHESCOPE_COOKIE_SECURE": "maybe"}
    result = subprocess.run(
        [sys.executable, "-m", "api.process.cli", "migrate"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "NICHESCOPE_COOKIE_SECURE" in result.stderr


def test_serve_answers_and_stops_gracefully_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    database = tmp_path / "served.db"
    with _serving("serve", "--port", str(port), env=_env(tmp_path, database)) as process:
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "service did not start within 60 s"
                time.sleep(0.2)
        assert response.status_code == 200
        assert database.exists()  # the embedded SQLite migrated itself
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def _service_and_simulator_ports() -> tuple[int, int]:
    """A free port for the service and one for the demo's simulator whose next port is free
    too (the simulator serves its API there), the three distinct: two ports drawn apart could
    be neighbours, and the demo then failed to start."""
    for _ in range(100):
        port, simulator = free_port(), free_port()
        if port in (simulator, simulator + 1) or simulator + 1 >= server_ports()[1]:
            continue  # (its neighbour would be the first of the connections' ports)
        with socket.socket() as api:
            try:
                api.bind(("127.0.0.1", simulator + 1))
            except OSError:
                continue
        return port, simulator
    raise RuntimeError("no free pair of neighbouring ports")


def test_demo_serves_the_simulator_and_a_demo_account_with_a_trial(tmp_path: Path) -> None:
    port, simulator_port = _service_and_simulator_ports()
    with _serving(
        "serve", "--demo", "--port", str(port), "--simulator-port", str(simulator_port),
        env=_env(tmp_path, tmp_path / "demo.db"),
    ) as process:  # fmt: skip
        assert process.stdout is not None
        printed: dict[str, str] = {}
        lines: list[str] = []  # what it printed, for a failure's message
        deadline = time.monotonic() + 60
        while "simulator" not in printed:
            assert time.monotonic() < deadline and process.poll() is None, "\n".join(lines[-30:])
            line = process.stdout.readline().strip()
            lines.append(line)
            for key in ("open", "sign in as", "password", "simulator"):
                if line.startswith(key):
                    printed[key] = line.removeprefix(key).split()[0]
        origin = f"http://127.0.0.1:{simulator_port}"
        assert printed["simulator"] == origin
        # Without NICHESCOPE_PUBLIC_URL the banner, links and MCP card follow the port served.
        assert printed["open"] == f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            card = client.get("/mcp/manifest").json()
            assert card["endpoint"] == f"http://127.0.0.1:{port}/mcp"
            login = client.post(
                "/api/auth/login",
                json={"email": printed["sign in as"], "password": printed["password"]},
            )
            assert login.status_code == 200, login.text
            assert client.get("/api/auth/me").json()["billing"]["plan"] == "trial"
            started = client.post(
                "/api/monitoring/start", json={"url": f"{origin}/catalog", "interval_seconds": 5}
            )
            assert started.status_code == 202, started.text
            monitor_id = started.json()["id"]
            while client.get(f"/api/monitoring/{monitor_id}").json()["status"] != "active":
                assert time.monotonic() < deadline
                time.sleep(0.2)
            counts = client.get(f"/api/monitoring/{monitor_id}").json()["counts"]
            assert counts["open"] > 0
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def test_long_running_commands_tune_the_collector() -> None:
    """Run in a child process: the settings are the process's own, and this one is pytest's."""
    probe = (
        "import gc; import api.process.cli;"
        "from api.process.collector import YOUNG_COLLECTION_THRESHOLD, tune_collector;"
        "before = gc.get_threshold(); tune_collector(); after = gc.get_threshold();"
        "print(before[1:] == after[1:], after[0] == YOUNG_COLLECTION_THRESHOLD > before[0],"
        " gc.get_freeze_count() > 100_000)"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert found.stdout.split() == ["True", "True", "True"]
