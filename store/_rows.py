"""From ORM rows to frozen records: one copier instead of a hand-written mapper per table."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

R = TypeVar("R")


def to_record(record_type: type[R], row: Any, **renamed: str) -> R:
    """Build `record_type` from the same-named attributes of `row`.

    `renamed` maps a record field to the row attribute it comes from when the names differ.
    """
    values = {
        f.name: getattr(row, renamed.get(f.name, f.name))
        for f in fields(record_type)  # type: ignore[arg-type]
    }
    return record_type(**values)


def record_fields(record: Any) -> dict[str, Any]:
    """A record's fields as a dict, shallowly: unlike `dataclasses.asdict`, which deep-copies
    every value (a tenth of a millisecond per listing, most of a listings page's cost), the
    values are shared. Records are frozen and their values immutable, so sharing is safe."""
    return {f.name: getattr(record, f.name) for f in fields(record)}
