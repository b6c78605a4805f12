"""Raw JSON-RPC over HTTP helpers for /mcp tests."""

from __future__ import annotations

import json
from typing import Any

import httpx

MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}


def request(method: str, params: dict[str, Any] | None = None, id: int | str = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        body["params"] = params
    return body


async def post(
    client: httpx.AsyncClient, body: Any, headers: dict[str, str] | None = None
) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await client.post("/mcp", content=content, headers={**MCP_HEADERS, **(headers or {})})


async def initialize(client: httpx.AsyncClient, version: str = "2025-06-18") -> str:
    """Run the handshake; returns the session id."""
    response = await post(
        client,
        request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "tests", "version": "0"},
            },
        ),
    )
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    notified = await post(
        client,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": version},
    )
    assert notified.status_code == 202
    return session_id


async def call_tool(
    client: httpx.AsyncClient,
    name: str,
    arguments: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return await post(client, request("tools/call", params), headers)


def rpc_error(response: httpx.Response, status: int, code: int) -> dict[str, Any]:
    """Assert a JSON-RPC error answer with this HTTP status and error code."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body  # type: ignore[no-any-return]
