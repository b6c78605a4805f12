"""The data tools (monitors, runs, analyses) over /mcp: same answers as REST, same scoping and
validation, scopes, paging with cursor/nextCursor. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema
import trio
from mcp import ClientSession

from api.analyses.schemas import AnalysisOut
from api.mcp.tools._analysis_page import DEFAULT_FIELDS, NICHE_FIELDS
from tests.api.helpers import assert_envelope, bearer, create_token, signed_in
from tests.conftest import RunningService
from tests.engine.fake_market import FakeMarket
from tests.mcp.helpers import call_tool, post, request, rpc_error
from tests.mcp.test_sdk_client import with_session

URL = "https://www.vinted.fr/catalog?catalog[]=1904"


async def _schemas(client: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    tools = (await post(client, request("tools/list"))).json()["result"]["tools"]
    return {tool["name"]: tool["outputSchema"] for tool in tools}


async def _until(client: httpx.AsyncClient, path: str, key: str, values: set[str]) -> Any:
    """Poll a REST document with the client's credentials until `key` is one of `values`."""
    with trio.fail_after(30):
        while True:
            body = (await client.get(path)).json()
            if body[key] in values:
                return body
            await trio.sleep(0.05)


async def _result(
    client: httpx.AsyncClient, name: str, arguments: dict[str, Any], token: str
) -> dict[str, Any]:
    """The `result` of a tools/call with the token, over a 200 answer."""
    response = await call_tool(client, name, arguments, bearer(token))
    assert response.status_code == 200, response.text
    return response.json()["result"]  # type: ignore[no-any-return]


async def _structured(
    client: httpx.AsyncClient, name: str, arguments: dict[str, Any], token: str
) -> dict[str, Any]:
    result = await _result(client, name, arguments, token)
    assert result["isError"] is False, result
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    return result["structuredContent"]  # type: ignore[no-any-return]


async def _tool_error(
    client: httpx.AsyncClient, name: str, arguments: dict[str, Any], token: str
) -> dict[str, Any]:
    result = await _result(client, name, arguments, token)
    assert result["isError"] is True and "structuredContent" not in result, result
    return json.loads(result["content"][0]["text"])["error"]  # type: ignore[no-any-return]


def _as_rest(page: dict[str, Any]) -> dict[str, Any]:
    """A get_analysis answer with every field, niche and alert (the analysis of 20 listings
    has fewer niches and alerts than a page) as REST answers it: without the page's fields."""
    assert page["truncated"] is False and page["niches_total"] == len(page["result"]["niches"])
    return {key: value for key, value in page.items() if key in AnalysisOut.model_fields}


async def test_sdk_every_data_tool_matches_rest(
    service: RunningService, market: FakeMarket
) -> None:
    for item in range(1, 41):
        market.list(item, price=f"{10 + item % 7}.00")
    async with service.client() as browser, service.client() as stranger:
        await signed_in(browser)
        writer = await create_token(browser, ["read", "write"])
        reader = await create_token(browser, ["read"])
        await signed_in(stranger)
        stranger_token = await create_token(stranger, ["read", "write"])
        schemas = await _schemas(browser)

        async def work(session: ClientSession) -> dict[str, Any]:
            # The SDK checks `structuredContent` against the listed output schema itself.
            await session.list_tools()

            async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                result = await session.call_tool(name, arguments)
                assert result.is_error is False, result
                assert isinstance(result.structured_content, dict)
                jsonschema.validate(result.structured_content, schemas[name])
                assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
                return result.structured_content

            out: dict[str, Any] = {}
            out["monitor"] = await call(
                "create_monitor", {"url": URL, "label": " jeans ", "interval_seconds": 60}
            )
            out["run"] = await call("create_analysis", {"url": URL, "max_items": 20})
            await _until(browser, f"/api/monitoring/{out['monitor']['id']}", "status", {"active"})
            finished = await _until(
                browser, f"/api/runs/{out['run']['id']}", "state", {"succeeded", "failed"}
            )
            assert finished["state"] == "succeeded", finished
            for name in ("list_monitorings", "list_runs", "list_analyses"):
                out[name] = await call(name, {})
            asked = {"analysis_id": finished["analysis_id"], "fields": list(NICHE_FIELDS)}
            out["analysis"] = await call("get_analysis", asked)
            out["default"] = await call("get_analysis", {"analysis_id": finished["analysis_id"]})
            return out

        out = await with_session(service, bearer(writer), work)

        monitor, run = out["monitor"], out["run"]
        assert monitor["status"] == "paused" and monitor["label"] == "jeans"
        assert run["state"] in {"queued", "running"} and run["source"] == "url"
        assert run["id"] in run["next_steps"] and "get_analysis" in run["next_steps"]
        # The same documents as REST for the same data.
        rest_monitors = (await browser.get("/api/monitoring")).json()["monitors"]
        assert out["list_monitorings"] == {
            "monitors": rest_monitors,
            "total": 1,
            "nextCursor": None,
        }
        assert rest_monitors[0]["id"] == monitor["id"]
        rest_runs = (await browser.get("/api/runs")).json()
        assert out["list_runs"] == {"runs": rest_runs["runs"], "total": 1, "nextCursor": None}
        rest_analyses = (await browser.get("/api/analyses")).json()
        assert out["list_analyses"]["analyses"] == rest_analyses["analyses"]
        analysis_id = rest_analyses["analyses"][0]["id"]
        rest_analysis = (await browser.get(f"/api/analyses/{analysis_id}")).json()
        assert _as_rest(out["analysis"]) == rest_analysis
        assert out["analysis"]["result"]["niches"]
        # By default, each niche without the survival curve and the score's workings.
        assert out["default"]["result"]["niches"] == [
            {f: n[f] for f in DEFAULT_FIELDS} for n in rest_analysis["result"]["niches"]
        ]

        # A read-only token reads the same; another workspace sees nothing and gets not_found.
        asked = {"analysis_id": analysis_id, "fields": list(NICHE_FIELDS)}
        assert (await _structured(browser, "get_analysis", asked, reader)) == out["analysis"]
        error = await _tool_error(
            stranger, "get_analysis", {"analysis_id": analysis_id}, stranger_token
        )
        assert error["code"] == "not_found"
        for name, key in (
            ("list_monitorings", "monitors"),
            ("list_runs", "runs"),
            ("list_analyses", "analyses"),
        ):
            empty = await _structured(stranger, name, {}, stranger_token)
            assert empty == {key: [], "total": 0, "nextCursor": None}
        # A run of another workspace's monitor is refused like over REST.
        error = await _tool_error(
            stranger, "create_analysis", {"monitor_id": monitor["id"]}, stranger_token
        )
        assert error["code"] == "not_found"


async def test_write_tools_validation_scope_and_paging(
    service: RunningService, market: FakeMarket
) -> None:
    market.list(1)
    async with service.client() as browser, service.client() as agent:
        await signed_in(browser)
        writer = await create_token(browser, ["read", "write"])
        reader = await create_token(browser, ["read"])

        # Same validation as POST /api/monitoring/start and POST /api/runs.
        for name, arguments, code in (
            ("create_monitor", {"url": URL, "interval_seconds": 5}, "interval_too_short"),
            ("create_monitor", {"url": "http://169.254.169.254/"}, "url_refused"),
            ("create_analysis", {"url": "http://127.0.0.1:22/"}, "url_refused"),
            ("create_analysis", {"monitor_id": "mon_nope"}, "not_found"),
        ):
            assert (await _tool_error(agent, name, arguments, writer))["code"] == code, arguments
        for name, arguments in (
            ("create_monitor", {"url": URL, "analysis_id": "an_1"}),
            ("create_monitor", {"label": "no source"}),
            ("create_analysis", {"url": URL, "max_items": 0}),
            ("create_analysis", {"url": URL, "colour": "red"}),
            ("list_runs", {"limit": 101}),
        ):
            rpc_error(await call_tool(agent, name, arguments, bearer(writer)), 200, -32602)
        assert (await browser.get("/api/monitoring")).json()["monitors"] == []

        # A read-only token calling a write tool: 403 with the envelope, nothing created.
        for name, arguments in (
            ("create_monitor", {"url": URL, "interval_seconds": 60}),
            ("create_analysis", {"url": URL}),
        ):
            denied = await call_tool(agent, name, arguments, bearer(reader))
            assert_envelope(denied, 403, "insufficient_scope")
            assert 'scope="write"' in denied.headers["www-authenticate"]
        assert (await browser.get("/api/runs")).json()["total"] == 0

        # Paging: three runs, two monitors; pages of 2 and 1 walk them with cursor/nextCursor.
        for _ in range(3):
            await _structured(agent, "create_analysis", {"url": URL, "max_items": 1}, writer)
        for _ in range(2):
            await _structured(agent, "create_monitor", {"url": URL, "interval_seconds": 60}, writer)
        for name, key, limit, pages in (
            ("list_runs", "runs", 2, 2),
            ("list_monitorings", "monitors", 1, 2),
        ):
            seen: list[str] = []
            cursor: str | None = None
            walked = 0
            while True:
                arguments: dict[str, Any] = {"limit": limit}
                if cursor is not None:
                    arguments["cursor"] = cursor
                page = await _structured(agent, name, arguments, reader)
                seen += [item["id"] for item in page[key]]
                walked += 1
                cursor = page["nextCursor"]
                if cursor is None:
                    break
            rest_path = "/api/runs" if key == "runs" else "/api/monitoring"
            assert seen == [item["id"] for item in (await browser.get(rest_path)).json()[key]]
            assert walked == pages, (name, walked)
        # A cursor is opaque but checked: garbage, or one of another list, is -32602.
        runs_cursor = (await _structured(agent, "list_runs", {"limit": 1}, reader))["nextCursor"]
        for name, cursor in (("list_runs", "not a cursor"), ("list_analyses", runs_cursor)):
            bad = await call_tool(agent, name, {"cursor": cursor}, bearer(reader))
            rpc_error(bad, 200, -32602)
