"""The monitor export: a self-describing JSON document, streamed so memory stays flat.

The format is the engine's (`engine.analysis.export_format`: name, version, the order of the
document's keys, the pydantic models of its parts); this module writes it and serves its JSON
Schema, `EXPORT_SCHEMA` (at `/api/monitoring/export-schema`), generated from the models the
import validates with. Shape (version 2):

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

from engine.analysis.export_format import ARRAY_KEYS, export_head, export_json_schema
from store import MonitorRecord, Store, record_fields

# The export's JSON Schema, served as is: one document, its parts under `$defs`.
EXPORT_SCHEMA: dict[str, Any] = export_json_schema()


def export_schema_components() -> dict[str, dict[str, Any]]:
    """The export's JSON Schema for the OpenAPI document (the import's body): the document as
    `MonitorExport` and its parts beside it, as components (the OpenAPI document's dialect
    applies: no `$schema`)."""
    schema = export_json_schema(ref_template="#/components/schemas/{model}")
    del schema["$schema"]
    parts: dict[str, dict[str, Any]] = schema.pop("$defs", {})
    return {"MonitorExport": schema, **parts}


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
    head = export_head(datetime.now(UTC), monitor_fields, counts)
    yield _dumps(head)[:-1].encode()  # leave the object open for the arrays
    sections: dict[str, AsyncIterator[Any]] = {
        "listings": store.monitors.iter_listings(monitor.id),
        "events": store.monitors.iter_events(monitor.id),
        "polls": store.monitors.iter_polls(monitor.id),
    }
    for name in ARRAY_KEYS:
        rows = sections[name]
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
