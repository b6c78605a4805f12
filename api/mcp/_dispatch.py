"""MCP methods after the handshake: `ping`, `tools/list`, `tools/call`.

`tools/call` is the only method that needs credentials: a PAT in the Authorization header
(cookies are never read here, and a session id never stands in for a token).
"""

from __future__ import annotations

from typing import Any

from quart import request

from api.http.auth import Principal, authenticate_bearer
from api.http.errors import InsufficientScope, Unauthorized
from api.mcp._blueprint import McpState
from api.mcp._protocol import INVALID_PARAMS, METHOD_NOT_FOUND, Message, RpcError
from api.mcp._registry import parse_arguments, run_tool


async def _principal() -> Principal:
    """The PAT's principal; `Unauthorized` (401 + WWW-Authenticate) when absent or not valid."""
    header = request.headers.get("Authorization")
    if header is None:
        raise Unauthorized()
    return await authenticate_bearer(header)


async def _call_tool(state: McpState, params: dict[str, Any]) -> dict[str, Any]:
    principal = await _principal()
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "tools/call needs params.name (a tool name)")
    tool = state.registry.get(name)
    if tool is None:
        raise RpcError(
            INVALID_PARAMS,
            f"Unknown tool: {name}",
            data={"known": [t.name for t in state.registry]},
        )
    if tool.scope not in principal.scopes:
        err = InsufficientScope(tool.scope)
        err.headers["WWW-Authenticate"] = (
            f'Bearer realm="nichescope", error="insufficient_scope", scope="{tool.scope}"'
        )
        raise err
    raw_arguments = params.get("arguments")
    if raw_arguments is None:
        raw_arguments = {}
    if not isinstance(raw_arguments, dict):
        raise RpcError(INVALID_PARAMS, "params.arguments must be an object")
    arguments = parse_arguments(tool, raw_arguments)
    return await run_tool(tool, principal, arguments)


async def dispatch(state: McpState, message: Message) -> dict[str, Any]:
    """The result of request `message`, or `RpcError`; `ApiError` (401/403) propagates to be
    answered with the service's error envelope."""
    match message.method:
        case "ping":
            return {}
        case "tools/list":
            return state.registry.page(message.params.get("cursor"))
        case "tools/call":
            return await _call_tool(state, message.params)
        case _:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {message.method}")
