"""From ORM rows to frozen records: one copier instead of a hand-written mapper per table."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

from sqlalchemy.engine import Result

R = TypeVar("R")


_FIELD_NAMES: dict[type[Any], tuple[str, ...]] = {}


def field_names(record_type: type[Any]) -> tuple[str, ...]:
    """The fields of a record type, once: `dataclasses.fields` builds a tuple per call."""
    names = _FIELD_NAMES.get(record_type)
    if names is None:
        names = _FIELD_NAMES[record_type] = tuple(f.name for f in fields(record_type))
    return names


def to_record(record_type: type[R], row: Any, **renamed: str) -> R:
    """Build `record_type` from the same-named attributes of `row`.

    `renamed` maps a record field to the row attribute it comes from when the names differ.
    """
    values = {name: getattr(row, renamed.get(name, name)) for name in field_names(record_type)}
    return record_type(**values)


def records(record_type: type[R], result: Result[Any]) -> list[R]:
    """Records from a Core result whose columns include every field of `record_type`, by
    position: a row's attributes are looked up by name one at a time, which for a page of
    listings cost more than the query."""
    names = field_names(record_type)
    keys = list(result.keys())
    at = [keys.index(name) for name in names]
    return [record_type(*[row[i] for i in at]) for row in result]


def record_fields(record: Any) -> dict[str, Any]:
    """A record's fields as a dict, shallowly: unlike `dataclasses.asdict`, which deep-copies
    every value (a tenth of a millisecond per listing, most of a listings page's cost), the
    values are shared. Records are frozen and their values immutable, so sharing is safe."""
    return {name: getattr(record, name) for name in field_names(type(record))}
