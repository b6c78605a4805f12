"""Rules the service enforces that its request models alone do not state, written into the
OpenAPI document so that generated clients validate before they send.

Some depend on the configuration (the catalogue URLs' sites, the plans on sale, the shortest
poll interval, the origins notifications may be sent to), so they are stated when the document
is built; the others are the shapes of the secrets the service hands out (reset and trial
tokens, MCP session ids) and of the headers some operations need. What
remains refused for schema-valid input is what no schema can state: a token that is well formed
but unknown or used, a webhook signature that does not verify, a catalogue URL or notification
webhook whose host does not resolve to a public address, a price_from above its price_to.
"""

from __future__ import annotations

from typing import Any

from api.billing.plans import configured_plans
from api.catalogue_urls import url_schema
from api.http.openapi_errors import validation_failed
from api.mcp.wire import SESSION_HEADER, SUPPORTED_VERSIONS, VERSION_HEADER
from api.notifications.channel_schema import kind_branches
from api.settings import Settings

# `security.new_secret()`: 32 random bytes, URL-safe base64 without padding.
SECRET_PATTERN = "^[A-Za-z0-9_-]{43}$"
# `mcp._sessions.McpSessions.issue`: nonce, negotiated version, signature.
MCP_SESSION_PATTERN = "^[A-Za-z0-9_-]{24}\\.[0-9]{4}-[0-9]{2}-[0-9]{2}\\.[A-Za-z0-9_-]{1,100}$"
STRIPE_SIGNATURE_PATTERN = "^t=[0-9]{1,12}(,v[0-9]=[0-9a-f]{64})+$"

JSON_RPC_MESSAGE = {
    "type": "object",
    "description": "One JSON-RPC 2.0 message: a request (`id` and `method`), a notification "
    "(`method` alone) or a response (`id` with `result` or `error`). Batches are refused.",
    "required": ["jsonrpc"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer"]},
        "method": {"type": "string", "minLength": 1},
        # Any value: params that are not an object are answered by JSON-RPC (a 200 carrying
        # error -32602), not refused by the transport.
        "params": {},
        "result": {},
        "error": {},
    },
    "anyOf": [
        {"required": ["method"]},
        {"required": ["id", "result"]},
        {"required": ["id", "error"]},
    ],
}


def state_runtime_rules(document: dict[str, Any], settings: Settings) -> None:
    schemas = document["components"]["schemas"]
    nullable_url = {"anyOf": [url_schema(settings), {"type": "null"}], "default": None}
    for name in ("StartMonitorRequest", "CreateRunRequest"):
        if name in schemas:
            schemas[name]["properties"]["url"] = nullable_url
    on_sale = [plan.name for plan in configured_plans(settings) if plan.purchasable]
    if on_sale and "CheckoutRequest" in schemas:
        schemas["CheckoutRequest"]["properties"]["plan"] = {"type": "string", "enum": on_sale}
    if "ResetPasswordRequest" in schemas:
        schemas["ResetPasswordRequest"]["properties"]["token"] = {
            "type": "string",
            "pattern": SECRET_PATTERN,
            "description": "The token of the reset link's `token` parameter",
        }
    if "JsonRpcMessage" in schemas:
        schemas["JsonRpcMessage"] = JSON_RPC_MESSAGE
    if "CreateChannelRequest" in schemas:  # with the origins this service may send to
        schemas["CreateChannelRequest"]["oneOf"] = kind_branches(settings.outbound_allow)
    if "StartMonitorRequest" in schemas:  # the service's floor; a plan's own is a 403
        interval = schemas["StartMonitorRequest"]["properties"]["interval_seconds"]
        _at_least(interval, settings.min_poll_seconds)
    paths = document["paths"]
    _required_query(paths, "/api/billing/trial/confirm", "get", "token", SECRET_PATTERN)
    # quart-schema documents every query parameter as optional: say which ones are not.
    _requires(paths, "/api/market/price-book", "get", ("site", "category_id"))
    _header(paths, "/api/billing/webhook", "post", "Stripe-Signature", STRIPE_SIGNATURE_PATTERN)
    _header(paths, "/mcp", "delete", SESSION_HEADER, MCP_SESSION_PATTERN)
    _header(paths, "/mcp", "post", SESSION_HEADER, MCP_SESSION_PATTERN, required=False)
    version = {"type": "string", "enum": list(SUPPORTED_VERSIONS)}
    for method in ("post", "delete"):
        _header(paths, "/mcp", method, VERSION_HEADER, None, required=False, schema=version)


def _at_least(schema: dict[str, Any], minimum: int) -> None:
    """Raise the `minimum` of an integer schema (or of its integer branch, when nullable)."""
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "integer":
            branch["minimum"] = max(int(branch.get("minimum", minimum)), minimum)


def _required_query(paths: dict[str, Any], path: str, method: str, name: str, pattern: str) -> None:
    operation = paths.get(path, {}).get(method)
    if operation is None:
        return
    _documents_validation(operation)
    for parameter in operation.get("parameters", []):
        if parameter["in"] == "query" and parameter["name"] == name:
            parameter["required"] = True
            parameter["schema"] = {"type": "string", "pattern": pattern}


def _requires(paths: dict[str, Any], path: str, method: str, names: tuple[str, ...]) -> None:
    for parameter in paths.get(path, {}).get(method, {}).get("parameters", []):
        if parameter["in"] == "query" and parameter["name"] in names:
            parameter["required"] = True


def _header(
    paths: dict[str, Any],
    path: str,
    method: str,
    name: str,
    pattern: str | None,
    *,
    required: bool = True,
    schema: dict[str, Any] | None = None,
) -> None:
    operation = paths.get(path, {}).get(method)
    if operation is None:
        return
    _documents_validation(operation)
    parameters = operation.setdefault("parameters", [])
    parameters[:] = [p for p in parameters if not (p["in"] == "header" and p["name"] == name)]
    parameters.append(
        {
            "name": name,
            "in": "header",
            "required": required,
            "schema": schema or {"type": "string", "pattern": pattern},
        }
    )


def _documents_validation(operation: dict[str, Any]) -> None:
    """An operation with declared input documents 422, as every other one does."""
    operation["responses"].setdefault("422", validation_failed())
