"""Pause and resume across nodes (two engines on one PostgreSQL): the command travels to the
node holding the monitor, serialised; its actor writes the status and the sender sees it. A
command the owner cannot take in time is dropped there, and the sender answers busy with
nothing changed."""

from __future__ import annotations

import dataclasses

import pytest
import trio

from engine import Engine, EngineBusy, open_engine
from store import Store
from tests.conftest import new_workspace
from tests.engine.fake_market import FakeMarket
from tests.engine.test_cluster import node_settings
from tests.engine.test_commands import _const, _poll_in_flight, _queue_depth, _status
from tests.engine.test_engine import _start, _until, _until_status

pytestmark = pytest.mark.postgres

TIMEOUT = 0.5  # how long a sender waits for a command to take effect


@pytest.fixture
def database_url(postgres_url: str) -> str:
    return postgres_url


async def _started(engine: Engine) -> Engine:
    with trio.fail_after(60):
        await engine.resumed.wait()
    return engine


async def test_a_pause_the_owner_cannot_take_in_time_is_busy_and_never_applied(
    store: Store,
) -> None:
    market = FakeMarket()
    market.list(1)
    workspace = await new_workspace(store)
    settings = {
        name: dataclasses.replace(node_settings(name), command_timeout_seconds=TIMEOUT)
        for name in ("node-a", "node-b")
    }
    async with (
        open_engine(store, market, settings["node-a"]) as a,
        open_engine(store, FakeMarket(), settings["node-b"]) as b,
    ):
        await _started(a)
        await _started(b)
        monitor = await _start(a, workspace, interval=3600, page_cap=1)
        assert monitor.id in a.monitor_tokens()
        await _until_status(store, monitor, "active")

        # Asked of node B, carried out by node A's actor: B returns once it is written.
        await b.pause(monitor)
        assert await _status(store, monitor.id) == "paused"
        await b.resume(monitor)
        assert await _status(store, monitor.id) == "active"
        assert monitor.id not in b.monitor_tokens()

        # Node A's actor is held in a poll: B's pause is not taken in time.
        gate = await _poll_in_flight(b, market, monitor.id)
        with pytest.raises(EngineBusy, match="was not paused by its node"):
            await b.pause(monitor)
        assert _queue_depth(a, monitor.id) == 1  # delivered to A, queued behind the poll
        gate.set()
        # A takes the command after its poll, past its deadline, and skips it.
        await _until(lambda: _const(_queue_depth(a, monitor.id) == 0))
        assert await _status(store, monitor.id) == "active"
