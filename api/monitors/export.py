"""The monitor export: a self-describing JSON document, streamed so memory stays flat.

Shape (version 2; `EXPORT_SCHEMA` is its JSON Schema, served at
`/api/monitoring/export-schema`):

    {"format": "nichescope.monitor-export", "version": 2, "exported_at": "...",
     "monitor": {...}, "counts": {..., "likely_sold": n},
     "listings": [{..., "state_evidence": "item_page", "absent_polls": 0, ...}, ...],
     "events": [{..., "evidence": "absence"}, ...], "polls": [{...}, ...]}

Version 2 adds how each state was established: `state_evidence` on listings and `evidence` on
state events (`detail_api`, `item_page`, or `absence`: sold by absence is a *likely* sale),
a listing's `absent_polls`, and today's listing fields (`condition_raw`, `category_name`,
`total_price`, `service_fee`, `promoted`). The import also takes version 1 (no evidence: its
sales count as confirmed).

Listings, events and polls are read a batch per transaction (keyset paging) and written as
they come, so a monitor with millions of rows exports with constant memory.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from store import MonitorRecord, Store, record_fields

EXPORT_FORMAT = "nichescope.monitor-export"
EXPORT_VERSION = 2


def _default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _dumps(value: object) -> str:
    return json.dumps(value, default=_default, separators=(",", ":"))


async def stream_export(store: Store, monitor: MonitorRecord) -> AsyncIterator[bytes]:
    counts = await store.monitors.listing_counts(monitor.id)
    monitor_fields = {k: v for k, v in record_fields(monitor).items() if k != "workspace_id"}
    head = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": datetime.now(UTC),
        "monitor": monitor_fields,
        "counts": counts,
    }
    yield _dumps(head)[:-1].encode()  # leave the object open for the arrays
    sections: list[tuple[str, AsyncIterator[Any]]] = [
        ("listings", store.monitors.iter_listings(monitor.id)),
        ("events", store.monitors.iter_events(monitor.id)),
        ("polls", store.monitors.iter_polls(monitor.id)),
    ]
    for name, rows in sections:
        yield f',"{name}":['.encode()
        batch: list[str] = []
        first = True
        async for row in rows:
            batch.append(_dumps(record_fields(row)))
            if len(batch) >= 500:
                yield (("" if first else ",") + ",".join(batch)).encode()
                first, batch = False, []
        if batch:
            yield (("" if first else ",") + ",".join(batch)).encode()
        yield b"]"
    yield b"}"


_DATETIME = {"type": "string", "format": "date-time"}
_NULLABLE_DATETIME = {"anyOf": [_DATETIME, {"type": "null"}]}
_NULLABLE_STRING = {"type": ["string", "null"]}
_NULLABLE_INT = {"type": ["integer", "null"]}
_DECIMAL = {"type": ["string", "null"], "pattern": r"^-?\d+(\.\d+)?$"}
_STATE = {"enum": ["open", "reserved", "sold", "deleted"]}
_EVIDENCE = {"enum": ["detail_api", "item_page", "absence", None]}

EXPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Nichescope monitor export",
    "type": "object",
    "required": ["format", "version", "exported_at", "monitor", "listings", "events", "polls"],
    "properties": {
        "format": {"const": EXPORT_FORMAT},
        "version": {"const": EXPORT_VERSION},
        "exported_at": _DATETIME,
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "monitor": {
            "type": "object",
            "required": ["id", "url", "status", "interval_seconds", "created_at"],
            "properties": {
                "id": {"type": "string"},
                "label": _NULLABLE_STRING,
                "url": {"type": "string"},
                "status": {"enum": ["paused", "active", "error"]},
                "interval_seconds": {"type": "integer"},
                "created_at": _DATETIME,
                "bootstrapped_at": _NULLABLE_DATETIME,
                "last_poll_at": _NULLABLE_DATETIME,
                "last_error_kind": _NULLABLE_STRING,
            },
        },
        "listings": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "item_id",
                    "state",
                    "first_seen_at",
                    "last_seen_at",
                    "state_changed_at",
                ],
                "properties": {
                    "item_id": {"type": "integer"},
                    "title": _NULLABLE_STRING,
                    "brand": _NULLABLE_STRING,
                    "size": _NULLABLE_STRING,
                    "condition": _NULLABLE_STRING,
                    "category_id": _NULLABLE_INT,
                    "price": _DECIMAL,
                    "currency": _NULLABLE_STRING,
                    "favourites": _NULLABLE_INT,
                    "views": _NULLABLE_INT,
                    "listed_at": _NULLABLE_DATETIME,
                    "first_seen_at": _DATETIME,
                    "last_seen_at": _DATETIME,
                    "state": _STATE,
                    "state_changed_at": _DATETIME,
                    "in_feed": {"type": "boolean"},
                    "condition_raw": _NULLABLE_STRING,
                    "category_name": _NULLABLE_STRING,
                    "total_price": _DECIMAL,
                    "service_fee": _DECIMAL,
                    "promoted": {"type": "boolean"},
                    "state_evidence": _EVIDENCE,
                    "absent_polls": {"type": "integer", "minimum": 0},
                },
            },
        },
        "events": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "item_id", "kind", "at"],
                "properties": {
                    "id": {"type": "integer"},
                    "item_id": {"type": "integer"},
                    "kind": {"enum": ["new", "state", "price", "counts"]},
                    "from_state": {"anyOf": [_STATE, {"type": "null"}]},
                    "to_state": {"anyOf": [_STATE, {"type": "null"}]},
                    "price": _DECIMAL,
                    "favourites": _NULLABLE_INT,
                    "views": _NULLABLE_INT,
                    "at": _DATETIME,
                    "evidence": _EVIDENCE,
                },
            },
        },
        "polls": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "started_at", "finished_at", "items", "new", "changed"],
                "properties": {
                    "id": {"type": "string"},
                    "started_at": _DATETIME,
                    "finished_at": _DATETIME,
                    "pages": {"type": "integer"},
                    "items": {"type": "integer"},
                    "new": {"type": "integer"},
                    "changed": {"type": "integer"},
                    "confirmed": {"type": "integer"},
                    "duration_ms": {"type": "integer"},
                    "error": _NULLABLE_STRING,
                    "market_at": _NULLABLE_DATETIME,
                    "clock": {"enum": ["market", "service", None]},
                },
            },
        },
    },
}
