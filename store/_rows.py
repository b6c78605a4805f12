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
