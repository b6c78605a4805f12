"""Text no database column can hold, refused at the door.

PostgreSQL refuses NUL characters in text, and lone surrogates (JSON's `\\ud800` escapes)
are not Unicode and cannot be encoded for any driver: both reached the database as 500s
(found by Schemathesis). Request models refuse them with a 422 naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationInfo

# Fields never stored as text (hashed on arrival): any character is fine in a password.
HASHED_FIELDS = frozenset({"password"})


def storable_text(value: object) -> object:
    """`value` unchanged, or `ValueError` if it (or any string inside it) is not storable."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("text must not contain NUL characters")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ValueError("text must be valid Unicode (no lone surrogates)") from err
    elif isinstance(value, Mapping):
        for key, item in value.items():
            storable_text(key)
            storable_text(item)
    elif isinstance(value, list | tuple):
        for item in value:
            storable_text(item)
    return value


def storable_field(value: Any, info: ValidationInfo) -> Any:
    """A pydantic `field_validator("*")`: `storable_text` for every field but hashed ones."""
    if info.field_name in HASHED_FIELDS:
        return value
    return storable_text(value)


# The JSON Schema of "text `storable_text` accepts" (PostgreSQL's one forbidden character).
STORABLE_PATTERN = "^[^\\u0000]*$"


def document_storable_text(schema: dict[str, Any]) -> None:
    """`json_schema_extra` for request models: every plain string property (no pattern or
    format of its own) states that NUL is refused, so the OpenAPI document says what
    validation does and generated clients and fuzzers do not send it."""

    def mark(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string" and "pattern" not in node and "format" not in node:
                node["pattern"] = STORABLE_PATTERN
            for branch in node.get("anyOf", ()):
                mark(branch)
            if isinstance(node.get("items"), dict):
                mark(node["items"])

    for name, node in schema.get("properties", {}).items():
        if name not in HASHED_FIELDS:
            mark(node)
