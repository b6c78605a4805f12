"""From ORM rows to frozen records: one copier instead of a hand-written mapper per table, and
one lookup of a workspace's row by id instead of one per table; and the ids of new rows."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.engine import Result
from sqlalchemy.orm import Session

R = TypeVar("R")


_FIELD_NAMES: dict[type[Any], tuple[str, ...]] = {}


def field_names(record_type: type[Any]) -> tuple[str, ...]:
    """The fields of a record type, once: `dataclasses.fields` builds a tuple per call."""
    names = _FIELD_NAMES.get(record_type)
    if names is None:
        names = _FIELD_NAMES[record_type] = tuple(f.name for f in fields(record_type))
    return names


def to_record(record_type: type[R], row: object, /, **converted: object) -> R:
    """Build `record_type` from the same-named attributes of `row`: an ORM row, or any
    object describing the same thing under the same names (the scrapers' listing, an
    observation).

    `converted` gives the value of a field outright where a plain copy will not do: a column
    of another name or type (a JSON list to a tuple, a text document parsed), so that a
    mapper names only the fields that differ instead of every field (a name that is no field
    is a `TypeError`, as in the constructor).
    """
    names = field_names(record_type)
    copied = {name: getattr(row, name) for name in names if name not in converted}
    return record_type(**copied, **converted)


def records(record_type: type[R], result: Result[Any]) -> list[R]:
    """Records from a Core result whose columns include every field of `record_type`, by
    position: a row's attributes are looked up by name one at a time, which for a page of
    listings cost more than the query."""
    names = field_names(record_type)
    keys = list(result.keys())
    at = [keys.index(name) for name in names]
    # `all()`, not iteration: one fetch call for the rows instead of one per row. sqlite3
    # lets go of the GIL around every step, and a worker thread that wants it back waits up
    # to the switch interval each time another thread (the Trio thread, under load) holds
    # it: measured with one busy thread beside, a page of 50 listings read row by row took
    # 75 ms of wall time, all at once 45 ms; alone, all at once costs 12% less CPU.
    return [record_type(*[row[i] for i in at]) for row in result.all()]


_FIELD_COPIERS: dict[type[Any], Callable[[Any], dict[str, Any]]] = {}


def record_fields(record: Any) -> dict[str, Any]:
    """A record's fields as a dict, shallowly: unlike `dataclasses.asdict`, which deep-copies
    every value (a tenth of a millisecond per listing, most of a listings page's cost), the
    values are shared. Records are frozen and their values immutable, so sharing is safe."""
    copier = _FIELD_COPIERS.get(type(record))
    if copier is None:
        copier = _FIELD_COPIERS[type(record)] = _field_copier(field_names(type(record)))
    return copier(record)


def _field_copier(names: tuple[str, ...]) -> Callable[[Any], dict[str, Any]]:
    """A function returning the dict of these attributes, written out as one dict display
    (as `dataclasses` writes `__init__`): half the cost of a comprehension calling `getattr`
    per field, on the API's listings page 50 times per request. Field names are
    identifiers (a dataclass refuses any other), so the source holds nothing else."""
    assert all(name.isidentifier() for name in names)
    items = ", ".join(f"{name!r}: record.{name}" for name in names)
    namespace: dict[str, Any] = {}
    exec(f"def copy(record):\n    return {{{items}}}\n", namespace)
    copier: Callable[[Any], dict[str, Any]] = namespace["copy"]
    return copier


def new_row(model: type[R], new: Any, id_field: str, /, **columns: Any) -> R:
    """A row of `model` from the command record `new` (`NewRun`, `NewUser`, ...): its field
    `id_field` as the row's `id`, every other field as the column of its name, and `columns`
    (those the command does not carry: a creation time, a starting state) added or, for a
    field stored in another form, put in its place."""
    values = record_fields(new) | columns
    values["id"] = values.pop(id_field)
    return model(**values)


def workspace_row(db: Session, model: type[R], row_id: str, workspace_id: str | None) -> R | None:
    """The row of `model` with this id, or None; with `workspace_id`, only if it belongs to
    that workspace (None: the engine's own use, across workspaces)."""
    if workspace_id is not None:
        return owned_row(db, model, row_id, workspace_id)
    table: Any = model  # every workspace-owned table has `id` and `workspace_id` columns
    return db.scalar(select(model).where(table.id == row_id))


def owned_row(
    db: Session, model: type[R], row_id: str, workspace_id: str, *, lock: bool = False
) -> R | None:
    """The row of `model` with this id in this workspace, or None: for what only a
    workspace reaches. A None workspace that slipped past the types matches no row (the
    column is never null), so the lookup fails closed. `lock`: held for update to the end
    of the transaction (PostgreSQL), for a writer that must take it before its children."""
    table: Any = model
    query = select(model).where(table.id == row_id, table.workspace_id == workspace_id)
    return db.scalar(query.with_for_update() if lock else query)


def rows_changed(result: object) -> int:
    """How many rows an INSERT, UPDATE or DELETE's result says it changed (0 when the driver
    does not say: a row count of -1 or none)."""
    return max(0, getattr(result, "rowcount", 0) or 0)


def new_id(prefix: str) -> str:
    """A fresh id for a new row: `prefix`, an underscore and 32 hex digits."""
    return f"{prefix}_{uuid.uuid4().hex}"
