"""Quotas hold under simultaneous requests (#33, item 4), on SQLite and PostgreSQL.

Before: every quota was a count in one transaction and the write in another, so requests that
arrived together all counted the same usage and all wrote: 12 simultaneous monitor starts on a
2-monitor plan created 12, 20 runs on a 10-a-day plan all ran, 29 channels went in against a
limit of 20 and 55 rules against 50. Now the count and the write are one transaction that
concurrent writers of a workspace take one at a time (`store/accounts/quotas.py`): exactly the limit
succeeds, and every other request gets the refusal a single request over the limit gets.

The requests are real and simultaneous: one nursery of httpx calls against the service on a
loopback socket, started together, nothing sleeping in between.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
import trio

from api.settings import Settings
from store import NewRule, QuotaFull, Store
from tests.api.helpers import active_monitor, assert_envelope, signed_in
from tests.conftest import (
    RunningService,
    ServiceClient,
    new_monitor,
    new_workspace,
    start_service,
)
from tests.engine.fake_market import FakeMarket
from tests.hardening.test_import_costs import IMPORT, JSON, _held_upload
from tests.hardening.test_unstorable_text import _export

URL = "https://www.vinted.fr/catalog?catalog[]=1904&brand_ids[]=53"
CHANNELS = "/api/notifications/channels"
RULES = "/api/notifications/rules"
BOT_TOKEN = "123456:" + "A" * 35
MONITORS, RUNS = 2, 10


@pytest.fixture
async def strict(
    settings: Settings, market: FakeMarket, nursery: trio.Nursery
) -> AsyncIterator[RunningService]:
    """The service with a trial of 2 active monitors and 10 runs a day."""
    market.list(1)
    quotas = {
        "active_monitors": MONITORS,
        "runs_per_day": RUNS,
        "items_per_run": 100,
        "min_poll_seconds": 60,
    }
    running, stop = await start_service(
        nursery, settings.model_copy(update={"plan_quotas": {"trial": quotas}}), market
    )
    yield running
    stop.set()


@pytest.fixture
async def client(strict: RunningService) -> AsyncIterator[ServiceClient]:
    async with strict.client() as signed:
        await signed_in(signed)
        yield signed


async def at_once(
    count: int, request: Callable[[int], Awaitable[httpx.Response]]
) -> list[httpx.Response]:
    """`request(0)` ... `request(count - 1)` all in flight together; their answers."""
    answers: list[httpx.Response] = []

    async def one(n: int) -> None:
        answers.append(await request(n))

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            for n in range(count):
                nursery.start_soon(one, n)
    return answers


def split(
    answers: list[httpx.Response], created: int, refused: int, code: str
) -> list[httpx.Response]:
    """The answers that created; every other one is the `refused` envelope `code`."""
    made = [a for a in answers if a.status_code == created]
    for answer in answers:
        if answer.status_code != created:
            assert_envelope(answer, refused, code)
    return made


async def test_simultaneous_monitor_starts_stop_at_the_plan(client: ServiceClient) -> None:
    body = {"url": URL, "interval_seconds": 60}
    answers = await at_once(12, lambda _: client.post("/api/monitoring/start", json=body))
    made = split(answers, 202, 403, "quota_exceeded")
    assert len(made) == MONITORS, [a.status_code for a in answers]
    for answer in answers:
        if answer.status_code == 403:
            error = answer.json()
            assert (error["quota"], error["limit"], error["in_use"]) == ("active_monitors", 2, 2)
    listed = (await client.get("/api/monitoring")).json()["monitors"]
    assert sorted(m["id"] for m in listed) == sorted(a.json()["id"] for a in made)
    usage = (await client.get("/api/billing/subscription")).json()["usage"]
    assert usage["active_monitors"] == MONITORS


async def test_simultaneous_runs_stop_at_the_days_quota(client: ServiceClient) -> None:
    body = {"url": URL, "max_items": 100}
    answers = await at_once(20, lambda _: client.post("/api/runs", json=body))
    made = split(answers, 201, 403, "quota_exceeded")
    assert len(made) == RUNS, [a.status_code for a in answers]
    for answer in answers:
        if answer.status_code == 403:
            assert answer.json()["quota"] == "runs_per_day" and answer.json()["limit"] == RUNS
    assert (await client.get("/api/runs")).json()["total"] == RUNS
    # A replay is a run too: the day is full.
    replay = await client.post(f"/api/runs/{made[0].json()['id']}/replay")
    assert_envelope(replay, 403, "quota_exceeded")


async def test_simultaneous_resumes_stop_at_the_plan(client: ServiceClient) -> None:
    """Paused monitors hold no slot; resuming takes one, atomically like a start."""
    paused = []
    for _ in range(2):  # two at a time: the plan's two slots, freed again by pausing
        started = [await active_monitor(client, URL) for _ in range(MONITORS)]
        for monitor_id in started:
            answer = await client.post(f"/api/monitoring/{monitor_id}/pause")
            assert answer.status_code == 200 and answer.json()["status"] == "paused"
        paused += started
    answers = await at_once(
        len(paused), lambda n: client.post(f"/api/monitoring/{paused[n]}/resume")
    )
    made = split(answers, 200, 403, "quota_exceeded")
    assert len(made) == MONITORS, [a.status_code for a in answers]
    listed = (await client.get("/api/monitoring")).json()["monitors"]
    assert sorted(m["status"] for m in listed) == ["active", "active", "paused", "paused"]


async def test_simultaneous_channels_stop_at_twenty(client: ServiceClient) -> None:
    body = {"kind": "telegram", "name": "bot", "bot_token": BOT_TOKEN, "chat_id": "7"}
    answers = await at_once(29, lambda _: client.post(CHANNELS, json=body))
    assert len(split(answers, 201, 409, "limit_reached")) == 20, [a.status_code for a in answers]
    assert len((await client.get(CHANNELS)).json()["channels"]) == 20


async def test_simultaneous_rules_stop_at_fifty(client: ServiceClient) -> None:
    answers = await at_once(
        55, lambda n: client.post(RULES, json={"name": f"r{n}", "kinds": ["deal"]})
    )
    assert len(split(answers, 201, 409, "limit_reached")) == 50, [a.status_code for a in answers]
    assert len((await client.get(RULES)).json()["rules"]) == 50


async def test_a_monitors_own_rules_and_new_rules_share_the_fifty(store: Store) -> None:
    """Replacing a monitor's own rules (the web page and the MCP tool do) while rules are
    created: both count under the one lock, in the store's own transactions."""
    workspace_id = await new_workspace(store)
    monitors = [(await new_monitor(store, workspace_id)).id for _ in range(2)]
    rule = NewRule(name="r", kinds=("deal",))
    for _ in range(40):
        await store.notify.add_rule(workspace_id, rule, at_most=50)
    outcomes: list[str] = []

    async def add() -> None:
        try:
            await store.notify.add_rule(workspace_id, rule, at_most=50)
            outcomes.append("added")
        except QuotaFull:
            outcomes.append("add refused")

    async def replace(monitor_id: str) -> None:
        try:
            await store.notify.set_monitor_rules(workspace_id, monitor_id, [rule] * 8, at_most=50)
            outcomes.append("set")
        except QuotaFull:
            outcomes.append("set refused")

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for n in range(12):
                nursery.start_soon(add)
                if n < len(monitors):
                    nursery.start_soon(replace, monitors[n])
    total = len(await store.notify.rules(workspace_id))
    assert total == 40 + outcomes.count("added") + 8 * outcomes.count("set") <= 50, outcomes
    if "add refused" in outcomes:  # refused one rule: the fifty were all taken by then
        assert total == 50, outcomes


async def test_an_import_held_while_the_day_fills_is_refused_at_its_write(
    strict: RunningService, market: FakeMarket, nursery: trio.Nursery
) -> None:
    """Imports count as runs. One whose upload is still arriving has passed the plan's check;
    runs that fill the day meanwhile make its write the one refused."""
    release = trio.Event()
    answer: list[httpx.Response] = []
    async with strict.client() as owner, strict.client() as ops:
        await signed_in(owner)
        await signed_in(ops, "ops@example.com")
        export = await _export(owner, market)
        body = json.dumps(export).encode()

        async def held_import() -> None:
            upload = _held_upload(body, release)
            answer.append(await owner.post(IMPORT, content=upload, headers=JSON))

        for _ in range(RUNS - 1):
            assert (await owner.post("/api/runs", json={"url": URL})).status_code == 201
        nursery.start_soon(held_import)
        with trio.fail_after(30):  # the upload has begun: the plan's check is behind it
            while (await ops.get("/api/ops/actors")).json()["imports"]["running"] < 1:
                await trio.sleep(0.02)
        assert (await owner.post("/api/runs", json={"url": URL})).status_code == 201
        release.set()
        with trio.fail_after(60):
            while not answer:
                await trio.sleep(0.02)
        assert assert_envelope(answer[0], 403, "quota_exceeded")["quota"] == "runs_per_day"
        assert (await owner.get("/api/runs")).json()["total"] == RUNS
        analyses = (await owner.get("/api/analyses")).json()["analyses"]
        assert [a for a in analyses if a["source"] == "import"] == []
