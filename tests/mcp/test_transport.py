"""Streamable HTTP transport rules on raw HTTP: headers, 202s, 405, versions, sessions, Origin,
Accept, batches, malformed JSON, JSON-RPC error codes, discovery. No database involved, so
these run on SQLite only."""

from __future__ import annotations

import pytest

from tests.api.helpers import assert_envelope
from tests.conftest import RunningService
from tests.mcp.helpers import call_tool, initialize, post, request, rpc_error


@pytest.fixture
def database_url(sqlite_url: str) -> str:
    return sqlite_url


async def test_initialize_negotiates_and_issues_a_session(service: RunningService) -> None:
    async with service.client() as client:
        response = await post(
            client, request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
        )
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        session_id = response.headers["mcp-session-id"]
        assert session_id.isascii() and session_id.isprintable() and " " not in session_id
        body = response.json()
        assert body["id"] == 1
        result = body["result"]
        assert result["protocolVersion"] == "2025-06-18"
        assert result["capabilities"] == {"tools": {"listChanged": False}}
        assert result["serverInfo"]["name"] == "nichescope"

        older = await post(client, request("initialize", {"protocolVersion": "2024-11-05"}))
        assert older.json()["result"]["protocolVersion"] == "2024-11-05"
        # A newer revision gets our latest as a counter-offer (spec negotiation).
        newer = await post(client, request("initialize", {"protocolVersion": "2026-07-28"}))
        assert newer.json()["result"]["protocolVersion"] == "2025-06-18"
        # Anything else is an error naming what we speak.
        bad = await post(client, request("initialize", {"protocolVersion": "1.0.0"}))
        error = rpc_error(bad, 200, -32602)["error"]
        assert error["data"]["supported"] == ["2025-06-18", "2025-03-26", "2024-11-05"]
        assert "2025-06-18" in error["message"]


async def test_notifications_and_responses_answer_202(service: RunningService) -> None:
    async with service.client() as client:
        session_id = await initialize(client)
        headers = {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-06-18"}
        for message in (
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}},
            {"jsonrpc": "2.0", "id": 7, "result": {}},
            {"jsonrpc": "2.0", "id": 8, "error": {"code": -1, "message": "no"}},
        ):
            response = await post(client, message, headers)
            assert response.status_code == 202, response.text
            assert response.content == b""
        ping = await post(client, request("ping", id=3), headers)
        assert ping.json() == {"jsonrpc": "2.0", "id": 3, "result": {}}


async def test_get_is_405_and_delete_ends_the_session(service: RunningService) -> None:
    async with service.client() as client:
        response = await client.get("/mcp", headers={"Accept": "text/event-stream"})
        assert response.status_code == 405
        allowed = set(response.headers["allow"].replace(" ", "").split(","))
        assert allowed == {"POST", "DELETE", "OPTIONS"}

        session_id = await initialize(client)
        headers = {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-06-18"}
        assert (await post(client, request("tools/list"), headers)).status_code == 200
        assert (await client.delete("/mcp", headers=headers)).status_code == 204
        rpc_error(await post(client, request("tools/list"), headers), 404, -32600)
        assert (await client.delete("/mcp", headers=headers)).status_code == 404
        assert (await client.delete("/mcp")).status_code == 400


async def test_versions_and_sessions_are_checked(service: RunningService) -> None:
    async with service.client() as client:
        session_id = await initialize(client)
        unsupported = await post(
            client, request("tools/list"), {"MCP-Protocol-Version": "1999-01-01"}
        )
        assert rpc_error(unsupported, 400, -32600)["error"]["data"]["supported"]
        mismatch = await post(
            client,
            request("tools/list"),
            {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2024-11-05"},
        )
        rpc_error(mismatch, 400, -32600)
        forged = session_id[:-4] + ("aaaa" if not session_id.endswith("aaaa") else "bbbb")
        unknown = await post(
            client,
            request("tools/list"),
            {"Mcp-Session-Id": forged, "MCP-Protocol-Version": "2025-06-18"},
        )
        rpc_error(unknown, 404, -32600)
        # No session and no version header: served (the version defaults to 2025-03-26).
        assert (await post(client, request("tools/list"))).status_code == 200


async def test_origin_is_validated(service: RunningService) -> None:
    async with service.client() as client:
        foreign = await post(client, request("ping"), {"Origin": "https://evil.example"})
        assert_envelope(foreign, 403, "forbidden_origin")
        assert_envelope(
            await client.delete("/mcp", headers={"Origin": "null"}), 403, "forbidden_origin"
        )
        for origin in (
            "http://testserver.local",  # NICHESCOPE_PUBLIC_URL of the test settings
            "http://localhost:6274",
            "http://127.0.0.1:3000",
            "http://[::1]:8080",
        ):
            response = await post(client, request("ping"), {"Origin": origin})
            assert response.status_code == 200, (origin, response.text)
        lookalike = await post(
            client, request("ping"), {"Origin": "http://testserver.local.evil.example"}
        )
        assert lookalike.status_code == 403


async def test_accept_content_type_batches_and_malformed_json(service: RunningService) -> None:
    async with service.client() as client:
        rpc_error(await post(client, request("ping"), {"Accept": "text/html"}), 406, -32600)
        wildcard = await post(client, request("ping"), {"Accept": "*/*"})
        assert wildcard.status_code == 200
        rpc_error(await post(client, request("ping"), {"Content-Type": "text/plain"}), 415, -32600)
        batch = await post(client, [request("ping", id=1), request("ping", id=2)])
        assert rpc_error(batch, 400, -32600)["id"] is None
        rpc_error(await post(client, b'{"jsonrpc": "2.0", "id": 1, "method":'), 400, -32700)
        rpc_error(await post(client, {"id": 1, "method": "ping"}), 400, -32600)
        rpc_error(await post(client, {"jsonrpc": "2.0", "id": [1], "method": "ping"}), 400, -32600)


async def test_json_rpc_error_codes(service: RunningService) -> None:
    async with service.client() as client:
        unknown = await post(client, request("resources/list", id="r1"))
        assert rpc_error(unknown, 200, -32601)["id"] == "r1"
        bad_params = await post(client, {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": 3})
        rpc_error(bad_params, 200, -32602)
        rpc_error(await post(client, request("tools/list", {"cursor": "%%%"})), 200, -32602)


async def test_tools_list_and_discovery_need_no_credentials(service: RunningService) -> None:
    async with service.client() as client:
        listed = (await post(client, request("tools/list"))).json()["result"]
        assert "nextCursor" not in listed
        whoami = next(t for t in listed["tools"] if t["name"] == "whoami")
        assert whoami["title"] and whoami["description"]
        assert whoami["inputSchema"]["type"] == "object"
        assert whoami["outputSchema"]["type"] == "object"
        assert whoami["annotations"] == {
            "title": whoami["title"],
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        }

        for path in ("/mcp/manifest", "/.well-known/mcp/manifest.json"):
            manifest = (await client.get(path)).json()
            assert manifest["endpoint"] == "http://testserver.local/mcp"
            assert manifest["auth"]["type"] == "bearer"
            tools = {tool["name"]: tool for tool in manifest["tools"]}
            assert tools["whoami"]["scope"] == "read"
        card = (await client.get("/.well-known/mcp.json")).json()
        assert card["name"] == "nichescope" and card["version"]
        assert card["remotes"] == [
            {"type": "streamable-http", "url": "http://testserver.local/mcp"}
        ]
        assert "2025-06-18" in card["supportedProtocolVersions"]
        assert card["auth"]["obtain_at"] == "http://testserver.local/account/keys"

        # tools/call without a token: 401 with the envelope, even for an unknown tool.
        denied = await call_tool(client, "nope")
        assert_envelope(denied, 401, "unauthorized")
        assert denied.headers["www-authenticate"].startswith("Bearer")


async def test_openapi_documents_the_mcp_routes(service: RunningService) -> None:
    async with service.client() as client:
        response = await client.get("/openapi.json")
    assert response.status_code == 200, response.text
    paths = response.json()["paths"]
    assert paths["/mcp"]["post"]["operationId"] == "postMcpMessage"
    assert paths["/mcp"]["post"]["security"] == []
    assert paths["/.well-known/mcp.json"]["get"]["operationId"] == "getMcpServerCard"
