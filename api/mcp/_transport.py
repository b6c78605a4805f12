"""`/mcp`: the Streamable HTTP transport (protocol revision 2025-06-18), JSON answers only.

POST takes one JSON-RPC message: a request is answered `application/json`, a notification or
a response 202 with no body. GET answers 405 (we never push server-initiated messages), DELETE
ends a session. Refusals about the protocol (parse errors, versions, sessions, Accept,
Content-Type) carry a JSON-RPC error body that MCP clients display; refusals about the caller
(Origin, credentials, scope, rate) carry the service's error envelope.
"""

from __future__ import annotations

import json as stdlib_json
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict
from quart import Response, request
from quart_schema import document_request, document_response

from api.http.errors import Forbidden
from api.http.openapi import operation
from api.mcp._blueprint import McpState, blueprint, mcp_state
from api.mcp._dispatch import dispatch
from api.mcp._protocol import (
    DEFAULT_HEADER_VERSION,
    PARSE_ERROR,
    Message,
    RpcError,
    classify,
    error_body,
    json_response,
    negotiate,
    result_body,
    transport_error,
)
from api.mcp.wire import SESSION_HEADER, SUPPORTED_VERSIONS, VERSION_HEADER
from api.ops.system import package_version
from api.services import services

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
INSTRUCTIONS = (
    "Nichescope finds sales niches on a second-hand fashion marketplace. Discovery needs no "
    "credentials; tools/call needs a personal access token (created at /account/keys) sent as "
    "'Authorization: Bearer nsc_...'. Start with the whoami tool."
)


class JsonRpcMessage(BaseModel):
    """One JSON-RPC 2.0 message (request, notification or response); batches are refused."""

    model_config = ConfigDict(extra="allow")
    jsonrpc: str = "2.0"
    id: str | int | None = None
    method: str | None = None
    params: dict[str, Any] | None = None


class JsonRpcAnswer(BaseModel):
    """The JSON-RPC response: `result`, or `error` with a numeric code."""

    model_config = ConfigDict(extra="allow")
    jsonrpc: str = "2.0"
    id: str | int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


def _origin_allowed(origin: str) -> bool:
    """No Origin (not a browser), our public origin, or a loopback origin (local tools)."""
    try:
        parts = urlsplit(origin)
        public = urlsplit(services().settings.public_url)
        port, public_port = parts.port, public.port
    except ValueError:
        return False
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        return False
    if parts.hostname in LOOPBACK_HOSTS:
        return True
    default = {"http": 80, "https": 443}
    return (parts.scheme, parts.hostname, port or default[parts.scheme]) == (
        public.scheme,
        public.hostname,
        public_port or default.get(public.scheme, 0),
    )


def _check_origin() -> None:
    """Refuse a foreign Origin (DNS-rebinding protection): 403 with the envelope."""
    origin = request.headers.get("Origin")
    if origin is not None and not _origin_allowed(origin):
        raise Forbidden(
            "This Origin may not use the MCP endpoint",
            code="forbidden_origin",
            suggest=["Call /mcp from a server-side client, or from this service's own origin"],
        )


def _version_error() -> Response | None:
    """400 if the request names a protocol version we do not speak."""
    version = request.headers.get(VERSION_HEADER)
    if version is None or version in SUPPORTED_VERSIONS:
        return None
    return transport_error(
        400,
        f"Unsupported {VERSION_HEADER}: {version!r}; supported: {', '.join(SUPPORTED_VERSIONS)}",
        data={"supported": list(SUPPORTED_VERSIONS), "requested": version},
    )


def _session_error(state: McpState) -> Response | None:
    """404 for an unknown or ended session id; 400 if it contradicts the version header.

    A request without a session id is served (sessions carry only the negotiated version), so
    simple clients may skip `initialize` and just send a token with `tools/call`.
    """
    session_id = request.headers.get(SESSION_HEADER)
    if session_id is None:
        return None
    negotiated = state.sessions.resolve(session_id)
    if negotiated is None:
        return transport_error(
            404, "Unknown or ended session: send initialize again to start a new one"
        )
    header = request.headers.get(VERSION_HEADER, DEFAULT_HEADER_VERSION)
    if VERSION_HEADER in request.headers and header != negotiated:
        return transport_error(
            400,
            f"This session negotiated {negotiated}, not {header}",
            data={"supported": [negotiated], "requested": header},
        )
    return None


def _accepts_json() -> bool:
    if "Accept" not in request.headers:
        return True
    return request.accept_mimetypes.quality("application/json") > 0


def _initialize(state: McpState, message: Message) -> Response:
    version = negotiate(message.params.get("protocolVersion"))
    result = {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": "nichescope", "title": "Nichescope", "version": package_version()},
        "instructions": INSTRUCTIONS,
    }
    return json_response(
        result_body(message.id, result),
        headers={SESSION_HEADER: state.sessions.issue(version)},
    )


@blueprint.post("/mcp")
@operation(
    "postMcpMessage",
    access="public",
    success=(202, "A notification or response, accepted; no body", None),
    rpc_errors=(400, 404, 406, 415),
)
@document_request(JsonRpcMessage)
@document_response(JsonRpcAnswer, 200)
async def post_message() -> Response:
    """MCP Streamable HTTP (protocol 2025-06-18): one JSON-RPC message per POST.

    `initialize`, `ping` and `tools/list` need no credentials; `tools/call` needs a personal
    access token (`Authorization: Bearer nsc_...`, scope per tool): 401/403 with the error
    envelope otherwise. Notifications and responses answer 202 with no body. `initialize`
    answers an `Mcp-Session-Id`; `DELETE /mcp` with that header ends the session (204), `GET
    /mcp` is 405 (no server-initiated stream). Limit: 300 requests per minute per client IP.
    """
    _check_origin()
    if not _accepts_json():
        return transport_error(406, "Accept must allow application/json")
    if request.mimetype != "application/json":
        return transport_error(415, "Send the message with Content-Type: application/json")
    body = await request.get_data(as_text=False)
    try:
        payload = stdlib_json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the stack allows
        return transport_error(400, "Parse error: the body is not valid JSON", code=PARSE_ERROR)
    try:
        message = classify(payload)
    except RpcError as err:
        return json_response(error_body(err, None), status=err.status)
    state = mcp_state()
    if message.kind == "request" and message.method == "initialize":
        try:
            return _initialize(state, message)
        except RpcError as err:
            return json_response(error_body(err, message.id), status=err.status)
    refusal = _version_error() or _session_error(state)
    if refusal is not None:
        return refusal
    if message.kind != "request":
        return Response(b"", status=202)
    try:
        result = await dispatch(state, message)
    except RpcError as err:
        return json_response(error_body(err, message.id), status=err.status)
    return json_response(result_body(message.id, result))


@blueprint.delete("/mcp")
@operation(
    "endMcpSession",
    access="public",
    success=(204, "The session ended; no body", None),
    rpc_errors=(400, 404),
)
async def end_session() -> Response:
    """End the MCP session named by the `Mcp-Session-Id` header (204; unknown: 404).

    There is no `GET /mcp`: this server sends no server-initiated messages, and the
    transport's rule for that is a 405 (the `Allow` header names POST and DELETE)."""
    _check_origin()
    refusal = _version_error()
    if refusal is not None:
        return refusal
    session_id = request.headers.get(SESSION_HEADER)
    if session_id is None:
        return transport_error(400, f"Send the {SESSION_HEADER} header of the session to end")
    if not mcp_state().sessions.end(session_id):
        return transport_error(404, "Unknown or already ended session")
    return Response(b"", status=204)
