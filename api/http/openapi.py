"""OpenAPI 3.1 description: operation ids, access levels, the standard error responses.

Routes declare themselves with `@operation("camelCaseId", access=...)`; the access level is
both enforced (see `auth.py`) and documented here, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeVar

from quart_schema import OpenAPIProvider
from quart_schema.openapi import QUART_SCHEMA_OPERATION_ID_ATTRIBUTE
from werkzeug.routing import AnyConverter, Rule

from api.http.openapi_errors import (
    FIELD_ERROR_SCHEMA,
    VALIDATION_SCHEMA,
    problem_response,
    validation_failed,
)
from api.http.openapi_links import Link, link_map
from api.http.openapi_tags import tag_operations
from api.http.security import RESOURCE_ID_PATTERN, ResourceIdConverter
from api.monitors.export import export_schema_components

Access = Literal["public", "user", "browser", "operator"]
ACCESS_ATTRIBUTE = "_nichescope_access"
F = TypeVar("F", bound=Callable[..., Any])

INTERFACE_VERSION = "1.0.0"
ERROR_STATUSES = {
    "400": "Bad request",
    "401": "Not authenticated",
    "403": "Forbidden",
    "404": "Not found",
    "429": "Rate limit exceeded",
    "500": "Internal server error",
    "503": "Service unavailable (the database cannot be reached)",
}
# What any operation with a request body may also answer.
BODY_ERROR_STATUSES = {
    "413": "Request body too large",
    "415": "Request body is not JSON",
}
# Statuses an operation declares itself with `@operation(errors=...)`.
EXTRA_ERROR_DESCRIPTIONS = {
    409: "Conflict with the resource's current state",
    410: "Gone (a link already used or expired)",
    502: "The payment provider did not answer as expected",
    503: "Service unavailable",
}

# What `api/mcp/_protocol.error_body` answers when the MCP transport refuses a request.
JSON_RPC_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "JsonRpcError",
    "required": ["jsonrpc", "id", "error"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "integer"},
                "message": {"type": "string"},
                "data": {"type": "object"},
            },
        },
    },
}

ENVELOPE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "ApiErrorEnvelope",
    "required": ["error"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "retry_after_seconds": {"type": "integer"},
        "error": {
            "type": "object",
            "required": ["code", "message", "docs_url", "suggest"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "docs_url": {"type": "string"},
                "suggest": {"type": "array", "items": {"type": "string"}},
            },
            "additionalProperties": True,
        },
    },
    "additionalProperties": True,
}

SECURITY_SCHEMES: dict[str, Any] = {
    "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "description": "Personal access token (nsc_...) created at /account/keys",
    },
    "cookieAuth": {"type": "apiKey", "in": "cookie", "name": "session_token"},
}


# `operation(success=...)` of a delete answered with 204 and no body.
DELETED = (204, "Deleted; no body", None)

SUCCESS_ATTRIBUTE = "_nichescope_success"
ERRORS_ATTRIBUTE = "_nichescope_errors"
RPC_ERRORS_ATTRIBUTE = "_nichescope_rpc_errors"
BODY_ATTRIBUTE = "_nichescope_body"
LINKS_ATTRIBUTE = "_nichescope_links"


def operation(
    operation_id: str,
    *,
    access: Access = "user",
    success: tuple[int, str, str | Mapping[str, dict[str, Any]] | None] | None = None,
    errors: tuple[int, ...] = (),
    rpc_errors: tuple[int, ...] = (),
    body: dict[str, Any] | None = None,
    links: Iterable[Link] = (),
) -> Callable[[F], F]:
    """Name a route for OpenAPI and set who may call it (enforced before the view runs).

    `success` documents a response that is not a JSON model: (status, description, media
    type or None for no body), e.g. `(204, "Deleted", None)` or `(200, "CSV", "text/csv")`;
    for an answer in several media types, a mapping media type -> schema instead.
    `errors` adds statuses beyond the standard ones that this operation answers with the
    error envelope (409, 410, 502); Schemathesis checks each answer against the list.
    `rpc_errors` are statuses answered with a JSON-RPC error body instead (the MCP transport).
    `body` documents a required request body the view reads itself: media type -> schema.
    `links` are the OpenAPI links of the success answer: the operations its ids feed (see
    `openapi_links`); two links to one operation are a `ValueError` at import.
    """
    named_links = link_map(links)

    def decorate(func: F) -> F:
        setattr(func, QUART_SCHEMA_OPERATION_ID_ATTRIBUTE, operation_id)
        setattr(func, ACCESS_ATTRIBUTE, access)
        if success is not None:
            setattr(func, SUCCESS_ATTRIBUTE, success)
        if errors:
            setattr(func, ERRORS_ATTRIBUTE, errors)
        if rpc_errors:
            setattr(func, RPC_ERRORS_ATTRIBUTE, rpc_errors)
        if body is not None:
            setattr(func, BODY_ATTRIBUTE, body)
        if named_links:
            setattr(func, LINKS_ATTRIBUTE, named_links)
        return func

    return decorate


def access_of(view: Callable[..., Any]) -> Access:
    return getattr(view, ACCESS_ATTRIBUTE, "user")  # type: ignore[no-any-return]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


class NichescopeOpenAPIProvider(OpenAPIProvider):
    def operation_id(self, method: str, path: str, func: Callable[..., Any]) -> str | None:
        return getattr(func, QUART_SCHEMA_OPERATION_ID_ATTRIBUTE, None) or func.__name__

    def generate_rules(self) -> Any:
        for rule in super().generate_rules():
            if rule.endpoint != "static" and rule.rule not in {"/openapi.json"}:
                view = self._app.view_functions[rule.endpoint]
                if hasattr(view, QUART_SCHEMA_OPERATION_ID_ATTRIBUTE):
                    yield rule

    def build_path_parameter(self, name: str, converter: Any) -> dict[str, Any]:
        parameter = super().build_path_parameter(name, converter)
        if isinstance(converter, ResourceIdConverter):
            parameter["schema"] = {"type": "string", "pattern": f"^{RESOURCE_ID_PATTERN}$"}
        elif isinstance(converter, AnyConverter):
            # The converter keeps its names in a set: sorted, the document is the same on
            # every start (and a seeded fuzzer draws the same cases).
            parameter["schema"] = {"type": "string", "enum": sorted(converter.items)}
        return parameter

    def build_request_body(self, model: Any, source: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        # Name request bodies as components (RegisterRequest, ...) like the interface does,
        # so clients and generators get stable type names.
        body, definitions = super().build_request_body(model, source)
        name = getattr(model, "__name__", None)
        if name:
            for media in body["content"].values():
                definitions[name] = media["schema"]
                media["schema"] = _ref(name)
            body["required"] = True
        return body, definitions

    def build_paths(self, rule: Rule) -> tuple[dict, dict]:
        paths, components = super().build_paths(rule)
        view = self._app.view_functions[rule.endpoint]
        for operations in paths.values():
            for method, op in operations.items():
                operations[method] = _documented_operation(view, dict(op))
        return paths, components

    def schema(self) -> dict[str, Any]:
        document = super().schema()
        schemas = document["components"].setdefault("schemas", {})
        schemas["ApiErrorEnvelope"] = ENVELOPE_SCHEMA
        schemas["JsonRpcError"] = JSON_RPC_ERROR_SCHEMA
        # The import's body (`MonitorExport`) and its parts.
        schemas.update(export_schema_components())
        schemas["FieldError"] = FIELD_ERROR_SCHEMA
        schemas["HTTPValidationError"] = VALIDATION_SCHEMA
        from api.http.openapi_rules import (
            state_runtime_rules,  # it reads modules that import this one
        )

        state_runtime_rules(document, self._app.extensions["nichescope"].settings)
        from api.notifications.webhook_docs import document_webhooks

        document_webhooks(document)  # the events webhook channels receive
        tag_operations(document)
        document["components"]["securitySchemes"] = SECURITY_SCHEMES
        # Health documents 422 and 503 with the envelope, as the interface declares.
        health = document["paths"].get("/health", {}).get("get")
        if health is not None:
            health["responses"]["422"] = problem_response("Validation failed", "ApiErrorEnvelope")
            health["responses"]["503"] = problem_response(
                "Database unavailable", "ApiErrorEnvelope"
            )
        return document


def _documented_operation(view: Any, op: dict[str, Any]) -> dict[str, Any]:
    """quart-schema's operation, completed with what the view's decorators declare."""
    op["responses"] = {str(code): value for code, value in op["responses"].items()}
    op["parameters"] = list(op.get("parameters", []))
    if (body := getattr(view, BODY_ATTRIBUTE, None)) is not None:
        op["requestBody"] = {
            "required": True,
            "content": {media: {"schema": schema} for media, schema in body.items()},
        }
    _document_access(op, access_of(view))
    _document_errors(op, view)
    _document_success(op, view)
    if links := getattr(view, LINKS_ATTRIBUTE, None):
        for code, response in op["responses"].items():
            if code.startswith("2"):
                op["responses"][code] = {
                    **response,
                    "links": {name: link.document() for name, link in links.items()},
                }
    return op


def _document_access(op: dict[str, Any], access: str) -> None:
    if access == "public":
        op["security"] = []
    elif access == "browser":
        op["security"] = [{"cookieAuth": []}]
    else:
        op["security"] = [{"bearerAuth": []}, {"cookieAuth": []}]
    if access in {"user", "operator"}:
        op["parameters"].append(
            {
                "name": "session_token",
                "in": "cookie",
                "required": False,
                "schema": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            }
        )


def _document_errors(op: dict[str, Any], view: Any) -> None:
    # As in the interface: any declared input (the optional session cookie counts) can fail
    # validation, so it documents 422.
    takes_input = bool(op["parameters"]) or "requestBody" in op
    declared = dict(ERROR_STATUSES)
    if "requestBody" in op:
        declared.update(BODY_ERROR_STATUSES)
    for code in getattr(view, ERRORS_ATTRIBUTE, ()):
        declared[str(code)] = EXTRA_ERROR_DESCRIPTIONS[code]
    for code in getattr(view, RPC_ERRORS_ATTRIBUTE, ()):
        op["responses"][str(code)] = {
            "description": "Refused at the transport, as a JSON-RPC error",
            "content": {"application/json": {"schema": _ref("JsonRpcError")}},
        }
    for status, description in declared.items():
        op["responses"].setdefault(status, problem_response(description, "ApiErrorEnvelope"))
    if takes_input:
        op["responses"].setdefault("422", validation_failed())


def _document_success(op: dict[str, Any], view: Any) -> None:
    if (custom := getattr(view, SUCCESS_ATTRIBUTE, None)) is not None:
        status, description, media = custom
        response: dict[str, Any] = {"description": description}
        if isinstance(media, str):
            response["content"] = {media: {"schema": {"type": "string"}}}
        elif media is not None:
            response["content"] = {m: {"schema": s} for m, s in media.items()}
        op["responses"][str(status)] = response
    if not any(code.startswith("2") for code in op["responses"]):
        op["responses"]["200"] = {
            "description": "Success",
            "content": {"application/json": {"schema": {}}},
        }
