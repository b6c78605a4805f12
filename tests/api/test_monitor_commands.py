"""Pause and resume over HTTP are commands the monitor's actor carries out: a full command
queue answers 429 `busy` (with Retry-After) before anything changed, on both databases."""

from __future__ import annotations

import httpx
import trio

from engine.monitors._registry import COMMAND_BUFFER
from tests.api.helpers import assert_envelope, signed_in, wait_active
from tests.conftest import RunningService
from tests.engine.fake_market import FakeMarket

URL = "https://www.vinted.fr/catalog?catalog[]=1904&brand_ids[]=53"


async def _queue_depth(ops: httpx.AsyncClient, monitor_id: str) -> int:
    actors = (await ops.get("/api/ops/actors")).json()["actors"]
    return int(next(a["queue_depth"] for a in actors if a["monitor_id"] == monitor_id))


async def test_a_full_command_queue_answers_429_and_changes_nothing(
    service: RunningService, market: FakeMarket
) -> None:
    market.list(1)
    async with service.client() as client:
        await signed_in(client, "ops@example.com")  # an operator: it may read the queue depth
        started = await client.post(
            "/api/monitoring/start", json={"url": URL, "interval_seconds": 60}
        )
        assert started.status_code == 202, started.text
        monitor_id = str(started.json()["id"])
        await wait_active(client, monitor_id)
        base = f"/api/monitoring/{monitor_id}"

        # Resume polls at once: the actor is then held in that poll and takes no command.
        gate = trio.Event()
        market.gate = gate
        calls = market.feed_calls
        assert (await client.post(f"{base}/resume")).status_code == 200
        with trio.fail_after(30):
            while market.feed_calls == calls:
                await trio.sleep(0.02)

        answers: list[int] = []

        async def resume() -> None:
            answers.append((await client.post(f"{base}/resume")).status_code)

        async with trio.open_nursery() as nursery:
            for _ in range(COMMAND_BUFFER):  # each waits for the actor, holding a place
                nursery.start_soon(resume)
            with trio.fail_after(30):
                while await _queue_depth(client, monitor_id) < COMMAND_BUFFER:
                    await trio.sleep(0.02)
            busy = await client.post(f"{base}/pause")
            assert_envelope(busy, 429, "busy")
            assert busy.headers["Retry-After"] == "1"
            assert (await client.get(base)).json()["status"] == "active"  # nothing changed
            gate.set()
        assert answers == [200] * COMMAND_BUFFER  # answered once the actor took them
        assert await _queue_depth(client, monitor_id) == 0
        assert (await client.get(base)).json()["status"] == "active"  # the pause never came
