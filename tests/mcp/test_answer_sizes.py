"""Answers fit an agent's context window (issue #32 item 8): on the demo's sample month
(200 niches, 48 alerts; the whole analysis is hundreds of KB), `get_analysis` answers 25
niches by default, pages with `next_arguments`, takes `fields`; every tool's default answer
stays under 64 KB. Through the official SDK client."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from mcp import ClientSession

from api.mcp._registry import MAX_ANSWER_BYTES
from api.mcp.tools import REGISTRY
from api.mcp.tools._analysis_page import DEFAULT_FIELDS, HEAVY, NICHE_FIELDS
from api.process.demo_sample import SAMPLE_LABEL
from tests.api.helpers import PASSWORD, bearer, create_token, start_trial
from tests.conftest import RunningService, ServiceClient
from tests.engine.fake_market import FakeMarket
from tests.mcp import sample_month
from tests.mcp.test_sdk_client import with_session


class Answer(NamedTuple):
    document: dict[str, Any]  # the structured content; on an error, the error's document
    size: int  # of its JSON text, in bytes
    is_error: bool


Call = Callable[[str, dict[str, Any]], Awaitable[Answer]]


@pytest.fixture(scope="session")
def sample_template(
    tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path, worker_id: str
) -> Path:
    """The populated database, recorded once per run (the workers' common folder under
    pytest-xdist: `worker_id` is "master" without it)."""
    base = tmp_path_factory.getbasetemp()
    return sample_month.shared(sqlite_template, base if worker_id == "master" else base.parent)


@pytest.fixture
def database_url(sample_template: Path, tmp_path: Path) -> str:
    return sample_month.copy_of(sample_template, tmp_path)


async def _agent(client: ServiceClient, scopes: list[str]) -> str:
    """Sign in as the sample's account (with a trial) and create a token."""
    response = await client.post(
        "/api/auth/login", json={"email": sample_month.EMAIL, "password": PASSWORD}
    )
    assert response.status_code == 200, response.text
    await start_trial(client, sample_month.EMAIL)
    return await create_token(client, scopes)


def _caller(session: ClientSession) -> Call:
    async def call(name: str, arguments: dict[str, Any]) -> Answer:
        result = await session.call_tool(name, arguments)
        text = result.content[0].text  # type: ignore[union-attr]
        document = json.loads(text)
        if not result.is_error:
            assert result.structured_content == document
        return Answer(document, len(text.encode()), result.is_error)

    return call


async def _sample_ids(client: ServiceClient) -> tuple[str, str]:
    """The sample month's analysis and monitor ids, through REST."""
    monitors = (await client.get("/api/monitoring", params={"page_size": 100})).json()
    monitor = next(m for m in monitors["monitors"] if m["label"] == SAMPLE_LABEL)
    analyses = (await client.get("/api/analyses", params={"page_size": 100})).json()
    analysis = next(a for a in analyses["analyses"] if a["source"] == "monitor")
    return analysis["id"], monitor["id"]


async def test_get_analysis_pages_the_sample_month(service: RunningService) -> None:
    async with service.client() as browser:
        token = await _agent(browser, ["read"])
        analysis_id, _ = await _sample_ids(browser)
        whole = await browser.get(f"/api/analyses/{analysis_id}")
    rest = whole.json()["result"]
    assert len(whole.content) > 5 * MAX_ANSWER_BYTES and len(rest["niches"]) == 200

    async def work(session: ClientSession) -> None:
        await session.list_tools()  # the SDK checks answers against the listed schemas
        call = _caller(session)
        page, size, _ = await call("get_analysis", {"analysis_id": analysis_id})
        assert size < MAX_ANSWER_BYTES, size
        niches = page["result"]["niches"]
        assert len(niches) == 25 and page["niches_total"] == 200 and page["offset"] == 0
        assert page["fields"] == list(DEFAULT_FIELDS)
        assert niches == [{f: n[f] for f in DEFAULT_FIELDS} for n in rest["niches"][:25]]
        assert page["result"]["alerts"] == rest["alerts"][:10]
        assert page["alerts_total"] == len(rest["alerts"]) > 10
        assert page["truncated"] is True and "get_analysis" in page["next"]
        assert page["next_arguments"] == {"analysis_id": analysis_id, "offset": 25, "limit": 25,
                                          "alerts_offset": 10, "alerts_limit": 10}  # fmt: skip
        assert page["result"]["sales_basis_note"] == rest["sales_basis_note"]

        # Walking `next_arguments` answers every niche and alert once, in order.
        ranks, alerts = [n["rank"] for n in niches], list(page["result"]["alerts"])
        while page["truncated"]:
            page, size, _ = await call("get_analysis", page["next_arguments"])
            assert size < MAX_ANSWER_BYTES, size
            ranks += [n["rank"] for n in page["result"]["niches"]]
            alerts += page["result"]["alerts"]
        assert ranks == list(range(1, 201)) and alerts == rest["alerts"]
        assert page["next"] is None and page["next_arguments"] is None

        # `fields` and `limit`: the heavy parts when named, rank and niche always.
        asked = {"analysis_id": analysis_id, "limit": 5, "fields": ["score", *HEAVY]}
        page = (await call("get_analysis", {**asked, "alerts_limit": 0})).document
        shapes = [set(niche) for niche in page["result"]["niches"]]
        assert shapes == [{"rank", "niche", "score", *HEAVY}] * 5
        assert page["result"]["alerts"] == [] and page["next_arguments"]["offset"] == 5
        assert page["result"]["niches"][0]["km_curve"] == rest["niches"][0]["km_curve"]

        # More than fits: as many niches as fit in 64 KB, and how to go on.
        every = {"analysis_id": analysis_id, "limit": 500, "fields": list(NICHE_FIELDS)}
        page, size, _ = await call("get_analysis", every)
        assert size < MAX_ANSWER_BYTES and page["truncated"], size
        assert 0 < len(page["result"]["niches"]) < 200
        assert "fewer `fields`" in page["next"]

        # An unknown field is an error result naming the valid ones.
        error, _, is_error = await call(
            "get_analysis", {"analysis_id": analysis_id, "fields": ["colour"]}
        )
        assert is_error and error["error"]["code"] == "unknown_field", error
        assert "colour" in error["error"]["message"] and "km_curve" in error["error"]["message"]

    await with_session(service, bearer(token), work)
    # The analysis writes the fields the tool knows of, no more and no fewer.
    assert set(rest["niches"][0]) == set(NICHE_FIELDS)


def _arguments(analysis_id: str, monitor_id: str, niche: dict[str, Any]) -> dict[str, Any]:
    """The least each tool takes (nothing but what it requires), by tool name."""
    rule = {"name": "Deals", "kinds": ["deal"], "filters": {"brands": ["Zara"]}}
    return {
        "whoami": {},
        "list_analyses": {},
        "get_analysis": {"analysis_id": analysis_id},
        "list_monitorings": {},
        "list_runs": {},
        "create_monitor": {"url": sample_month.CATALOGUE},
        "create_analysis": {"url": sample_month.CATALOGUE, "max_items": 5},
        "list_notification_rules": {"monitor_id": monitor_id},
        "set_notification_rules": {"monitor_id": monitor_id, "rules": [rule]},
        "get_price_book": {"site": "http://127.0.0.1:9", "category_id": niche["category_id"]},
    }


async def test_every_tool_answers_under_64_kb_by_default(
    service: RunningService, market: FakeMarket
) -> None:
    market.list(1)
    async with service.client() as browser:
        token = await _agent(browser, ["read", "write"])
        analysis_id, monitor_id = await _sample_ids(browser)
        top = (await browser.get(f"/api/analyses/{analysis_id}")).json()["result"]["niches"][0]
    arguments = _arguments(analysis_id, monitor_id, top["niche"])
    assert set(arguments) == {tool.name for tool in REGISTRY}

    async def work(session: ClientSession) -> dict[str, Answer]:
        await session.list_tools()
        call = _caller(session)
        return {name: await call(name, arguments[name]) for name in arguments}

    answers = await with_session(service, bearer(token), work)
    for name, (document, size, is_error) in answers.items():
        assert size < MAX_ANSWER_BYTES, (name, size)
        assert not is_error, (name, document)
    # The list tools answer a default page of a longer list, and say so.
    for name, key in (
        ("list_analyses", "analyses"),
        ("list_monitorings", "monitors"),
        ("list_runs", "runs"),
    ):
        page = answers[name].document
        assert len(page[key]) == 20 < page["total"] and page["nextCursor"], name
    assert answers["get_analysis"].document["truncated"] is True
