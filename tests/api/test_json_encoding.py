"""The app's JSON encoder (orjson) writes what Quart's default encoder wrote, for the values
handlers hand it."""

from __future__ import annotations

import dataclasses
import json
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import orjson
from pydantic import BaseModel
from quart import Quart
from quart.json.provider import DefaultJSONProvider
from quart_schema import QuartSchema

from api.json_encoding import OrjsonProvider


class Model(BaseModel):
    at: datetime
    price: Decimal


@dataclasses.dataclass(frozen=True)
class Record:
    id: str
    n: int


def _providers() -> tuple[DefaultJSONProvider, OrjsonProvider]:
    app = Quart(__name__)
    QuartSchema(app)
    default = app.json
    assert isinstance(default, DefaultJSONProvider)
    return default, OrjsonProvider(app, fallback=default)


def test_the_same_json_as_the_default_encoder() -> None:
    default, fast = _providers()
    at = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    value = {
        "b": [1, 2.5, None, True, "é"],
        "a": {"decimal": Decimal("12.50"), "when": at, "id": uuid.UUID(int=7)},
        "model": Model(at=at, price=Decimal("3.10")),
        "record": Record("x", 1),
        7: "int key",
    }
    # Keys keep their order (the default sorted them): compare parsed values.
    assert orjson.loads(fast.dumps(value)) == json.loads(default.dumps(value, sort_keys=False))
    assert orjson.loads(fast.dumps(value))["a"]["when"] == "2026-11-26T09:00:00Z"


def test_not_a_number_is_null_not_invalid_json() -> None:
    _, fast = _providers()
    assert fast.dumps({"x": float("nan")}) == '{"x":null}'


def test_indent_is_honoured_for_documents_meant_to_be_read() -> None:
    _, fast = _providers()
    assert fast.dumps({"a": 1}, indent=2) == '{\n  "a": 1\n}'
