"""The error answers of the OpenAPI document: how an error response is declared, and the
422's body, the envelope listing the offending fields (see `errors.validation_problem`)."""

from __future__ import annotations

from typing import Any


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


FIELD_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "FieldError",
    "required": ["loc", "field", "msg", "type"],
    "properties": {
        "loc": {
            "type": "array",
            "description": "`body` or `query`, then the path to the offending field",
            "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "field": {
            "type": ["string", "null"],
            "description": "The path as text (`filters.sizes[2]`); null for the whole body "
            "or query string",
        },
        "msg": {"type": "string"},
        "type": {"type": "string", "description": "e.g. `missing`, `extra_forbidden`"},
    },
}

_FIELD_ERRORS: dict[str, Any] = {
    "errors": {"type": "array", "items": {"$ref": "#/components/schemas/FieldError"}},
    "error_count": {"type": "integer", "minimum": 1},
}

# The envelope, as every 422 is; `invalid_request` (a body or query its model refuses) adds
# the offending fields. The name is the interface's; the shape is the envelope's.
VALIDATION_SCHEMA: dict[str, Any] = {
    "title": "HTTPValidationError",
    "description": "The error envelope; with code `invalid_request` it lists the offending "
    "fields in `errors` (at most 20; `error_count` counts them all).",
    "allOf": [{"$ref": "#/components/schemas/ApiErrorEnvelope"}],
    "type": "object",
    "properties": {
        **_FIELD_ERRORS,
        "error": {"type": "object", "properties": _FIELD_ERRORS},
    },
    "if": {"properties": {"error": {"properties": {"code": {"const": "invalid_request"}}}}},
    "then": {
        "required": ["errors", "error_count"],
        "properties": {"error": {"required": ["errors", "error_count"]}},
    },
}


def validation_failed() -> dict[str, Any]:
    """The 422 of an operation with declared input: the envelope, `invalid_request` listing
    the offending fields (a body that parses but means nothing valid, an import, has its own
    code and no list)."""
    return problem_response("Validation failed", "HTTPValidationError")


def problem_response(description: str, schema: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {
            "application/problem+json": {"schema": _ref(schema)},
            "application/json": {"schema": _ref(schema)},
        },
    }
