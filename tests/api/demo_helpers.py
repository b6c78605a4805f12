"""Running `serve --demo` in a test: in-process, on free ports, signed in as the demo account,
with the simulator's test paths at hand."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import trio

from api.process.demo import DEMO_EMAIL, demo_var
from api.process.serve import ServeOptions, serve
from api.settings import Settings


def free_pair() -> int:
    """A port whose next port is free too (the demo's simulator takes both)."""
    for _ in range(50):
        with socket.socket() as first, socket.socket() as second:
            first.bind(("127.0.0.1", 0))
            port = int(first.getsockname()[1])
            try:
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise AssertionError("no two free ports in a row")


async def start_demo(
    nursery: trio.Nursery, settings: Settings, simulator_port: int
) -> tuple[str, trio.Event, trio.Event]:
    """`serve --demo` in-process: its URL, the event that stops it and the one set once it
    has stopped (its sockets closed, its market's state written)."""
    stop, stopped = trio.Event(), trio.Event()
    options = ServeOptions(port=0, graceful_seconds=1, demo=True,
                           demo_simulator_port=simulator_port)  # fmt: skip

    async def run(task_status: trio.TaskStatus[list[str]]) -> None:
        try:
            await serve(settings, options, shutdown_trigger=stop, task_status=task_status)
        finally:
            stopped.set()

    binds: list[str] = await nursery.start(run)
    return binds[0], stop, stopped


@asynccontextmanager
async def signed_in_demo(url: str, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the demo at `url`, signed in as the demo account."""
    password = (demo_var(settings) / "demo_credentials.txt").read_text().strip()
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        login = await client.post(
            "/api/auth/login", json={"email": DEMO_EMAIL, "password": password}
        )
        assert login.status_code == 200, login.text
        yield client


async def sim(origin: str, path: str) -> Any:
    """The JSON answer of the demo's simulator at `origin` to `path` (its `/__sim__/` paths)."""
    async with httpx.AsyncClient(base_url=origin, timeout=30) as client:
        response = await client.get(path)
        response.raise_for_status()
        return response.json()
