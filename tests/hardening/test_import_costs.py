"""Imports cost what they weigh, a bounded number at a time, under the plan (#21, item 6).

Before: an import read its whole body into memory and parsed it into Python objects (a 59 MiB
export grew the server by 500 MB; three at once peaked at 1.9 GB), as many at once as anyone
sent, and a workspace without a plan could import while it could not create a run. Now the
body is spooled and read streaming (`api/analyses/imports.py`; the memory figures are
bench/bench_import_memory.py's), one import per workspace and two per node run at once (429
before the body is read), and imports count as runs under the plan.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import trio

from api.settings import Settings
from tests.api.helpers import assert_envelope, signed_in
from tests.conftest import RunningService, ServiceClient, start_service
from tests.engine.fake_market import FakeMarket
from tests.hardening.test_unstorable_text import _export

IMPORT = "/api/analysis/import-monitoring"
JSON = {"Content-Type": "application/json"}


def _held_upload(body: bytes, release: trio.Event) -> AsyncIterator[bytes]:
    """A chunked upload that sends its first bytes, then waits for `release`: an import in
    progress, holding its slots, for as long as the test wants."""

    async def chunks() -> AsyncIterator[bytes]:
        yield body[:10]
        await release.wait()
        yield body[10:]

    return chunks()


async def _export_of(client: ServiceClient, market: FakeMarket) -> bytes:
    await signed_in(client)
    return json.dumps(await _export(client, market)).encode()


async def test_one_import_per_workspace_and_two_per_node(
    service: RunningService, market: FakeMarket, nursery: trio.Nursery
) -> None:
    release = trio.Event()
    answers: dict[str, httpx.Response] = {}

    async def held(name: str, client: ServiceClient, body: bytes) -> None:
        answers[name] = await client.post(IMPORT, content=_held_upload(body, release), headers=JSON)

    async with (
        service.client() as ops,
        service.client() as alice,
        service.client() as bob,
        service.client() as carol,
    ):
        await signed_in(ops, "ops@example.com")
        alice_export, bob_export, carol_export = [
            await _export_of(c, market) for c in (alice, bob, carol)
        ]

        async def running_imports() -> int:
            return int((await ops.get("/api/ops/actors")).json()["imports"]["running"])

        nursery.start_soon(held, "alice", alice, alice_export)
        nursery.start_soon(held, "bob", bob, bob_export)
        with trio.fail_after(30):  # both uploads have begun: their slots are taken
            while await running_imports() < 2:
                await trio.sleep(0.02)
        again = await alice.post(IMPORT, content=alice_export, headers=JSON)
        assert_envelope(again, 429, "rate_limited")
        assert int(again.headers["Retry-After"]) > 0
        third = await carol.post(IMPORT, content=carol_export, headers=JSON)
        assert_envelope(third, 429, "rate_limited")
        release.set()
        with trio.fail_after(60):
            while len(answers) < 2:
                await trio.sleep(0.02)
        assert answers["alice"].status_code == answers["bob"].status_code == 201
        assert await running_imports() == 0
        # The slots are free again.
        assert (await carol.post(IMPORT, content=carol_export, headers=JSON)).status_code == 201


async def test_imports_need_a_plan_and_count_as_runs(
    settings: Settings, market: FakeMarket, nursery: trio.Nursery
) -> None:
    one_a_day = settings.model_copy(
        update={"plan_quotas": {"trial": {**settings.plan_quotas["trial"], "runs_per_day": 1}}}
    )
    service, stop = await start_service(nursery, one_a_day, market)
    async with service.client() as owner, service.client() as planless:
        await signed_in(owner)
        export = json.dumps(await _export(owner, market)).encode()
        first = await owner.post(IMPORT, content=export, headers=JSON)
        assert first.status_code == 201, first.text
        assert_envelope(
            await owner.post(IMPORT, content=export, headers=JSON), 403, "quota_exceeded"
        )
        await signed_in(planless, trial=False)
        assert_envelope(
            await planless.post(IMPORT, content=export, headers=JSON), 403, "plan_required"
        )
    stop.set()


async def test_a_chunked_import_is_cut_at_the_limit(
    settings: Settings, market: FakeMarket, nursery: trio.Nursery
) -> None:
    small = settings.model_copy(update={"import_max_bytes": 50_000})
    service, stop = await start_service(nursery, small, market)

    async def endless() -> AsyncIterator[bytes]:
        yield b'{"format": "nichescope.monitor-export", "padding": "'
        for _ in range(1000):
            yield b"x" * 1000

    async with service.client() as client:
        await signed_in(client)
        cut = await client.post(IMPORT, content=endless(), headers=JSON)
        assert_envelope(cut, 413, "payload_too_large")
        # A multipart upload must declare its length (it is refused early when too large).
        no_length = await client.post(
            IMPORT,
            content=endless(),
            headers={"Content-Type": "multipart/form-data; boundary=x", "Origin": service.url},
        )
        assert no_length.status_code in (411, 413), no_length.text
    stop.set()
