"""JSON-RPC 2.0 and MCP protocol constants, message classification and answers.

Pure functions, no I/O: the transport (`_transport.py`) decides HTTP statuses, this module
decides what a message is and what the JSON-RPC answer looks like.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from quart import Response, json

from api.mcp.wire import SUPPORTED_VERSIONS

LATEST_VERSION = SUPPORTED_VERSIONS[0]
# What the transport spec says to assume when a request carries no MCP-Protocol-Version.
DEFAULT_HEADER_VERSION = "2025-03-26"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

RequestId = str | int
_DATE_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}")


class RpcError(Exception):
    """A JSON-RPC error to answer to the request `id` (None when it could not be read)."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        data: dict[str, Any] | None = None,
        status: int = 200,
        request_id: RequestId | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.status = status
        self.request_id = request_id


@dataclass(frozen=True, slots=True)
class Message:
    """One classified JSON-RPC message. `id` is None for notifications."""

    kind: Literal["request", "notification", "response"]
    id: RequestId | None
    method: str | None
    params: dict[str, Any]


def classify(payload: Any) -> Message:
    """Read one decoded JSON value as a JSON-RPC 2.0 message, or raise `RpcError`.

    A JSON array (a batch) is refused: revision 2025-06-18 removed batching.
    """
    if isinstance(payload, list):
        raise RpcError(
            INVALID_REQUEST,
            "Batches are not supported: send one JSON-RPC message per POST",
            status=400,
        )
    if not isinstance(payload, dict) or payload.get("jsonrpc") != "2.0":
        raise RpcError(
            INVALID_REQUEST, 'Expected a JSON-RPC 2.0 object with "jsonrpc": "2.0"', status=400
        )
    raw_id = payload.get("id")
    has_id = "id" in payload
    if has_id and (isinstance(raw_id, bool) or not isinstance(raw_id, str | int)):
        raise RpcError(INVALID_REQUEST, "The id must be a string or an integer", status=400)
    request_id: RequestId | None = raw_id if has_id else None
    method = payload.get("method")
    if method is None:
        if has_id and ("result" in payload or "error" in payload):
            return Message("response", request_id, None, {})
        raise RpcError(INVALID_REQUEST, "A message needs a method (or a result/error)", status=400)
    if not isinstance(method, str) or not method:
        raise RpcError(
            INVALID_REQUEST,
            "The method must be a non-empty string",
            status=400,
            request_id=request_id,
        )
    params = payload.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError(
            INVALID_PARAMS, "params must be an object", request_id=request_id, status=200
        )
    kind: Literal["request", "notification"] = "request" if has_id else "notification"
    return Message(kind, request_id, method, params)


def negotiate(requested: Any) -> str:
    """The protocol version to answer an `initialize` offering `requested`.

    A supported version is echoed. A newer dated revision gets our latest as a counter-offer
    (the spec's negotiation: the client then accepts or disconnects). Anything else — a
    malformed, missing or older, unsupported version — is an `RpcError` naming what we speak.
    """
    if requested in SUPPORTED_VERSIONS:
        return str(requested)
    if (
        isinstance(requested, str)
        and _DATE_VERSION.fullmatch(requested)
        and requested > LATEST_VERSION
    ):
        return LATEST_VERSION
    raise RpcError(
        INVALID_PARAMS,
        f"Unsupported protocol version {requested!r}; supported: {', '.join(SUPPORTED_VERSIONS)}",
        data={"supported": list(SUPPORTED_VERSIONS), "requested": requested},
    )


def result_body(request_id: RequestId | None, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_body(err: RpcError, request_id: RequestId | None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": err.code, "message": err.message}
    if err.data is not None:
        error["data"] = err.data
    rid = err.request_id if err.request_id is not None else request_id
    return {"jsonrpc": "2.0", "id": rid, "error": error}


def json_response(
    body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    response = Response(json.dumps(body), status=status, content_type="application/json")
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def transport_error(
    status: int,
    message: str,
    *,
    code: int = INVALID_REQUEST,
    data: dict[str, Any] | None = None,
    request_id: RequestId | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """An HTTP-level refusal (400, 404, 405, 406, 415) as a JSON-RPC error body, which MCP
    clients show to their user; auth and rate-limit refusals use the service's envelope."""
    err = RpcError(code, message, data=data, status=status)
    return json_response(error_body(err, request_id), status=status, headers=headers)
