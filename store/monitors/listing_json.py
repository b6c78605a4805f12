"""A listings page written by the database as the API's JSON, in the statement that reads it.

Read into records and written out again, a page of fifty listings made 1,300 Python values
twice (fifty records, then fifty answer dicts), in a worker thread and on the Trio thread,
which contended for the GIL with every other request. The database writes the same array
itself (SQLite `json_group_array(json_object(...))`, in C, without the GIL; PostgreSQL
`json_agg(json_build_object(...))`, in its own process): the service only splices it into
the answer (`api/monitors/rest.py`).

What it writes is what `api.monitors.actions.listing_out` and `api_json` write, field for
field in the record's order: integers and text as they are, a `Numeric` as its fixed-point
string (what its SQLAlchemy processor and `str(Decimal)` give), booleans as `true`/`false`,
datetimes in ISO 8601 in UTC with `Z` and no fraction on a whole second (orjson's
`OPT_UTC_Z`), and `likely` derived as `listing_out` derives it. Each field's SQL is chosen
by its column's declared type, so a field added to `ListingRecord` is written as its type
says, or refused at import. `tests/api/test_listing_json.py` holds the two writers equal on
awkward values, on both databases. (PostgreSQL's JSON has a space around its colons; it
reads the same.)

A datetime SQLite holds in another form than SQLAlchemy's own (a row written by hand, a
migration's `CURRENT_TIMESTAMP`) cannot be rewritten here safely: the statement says whether
every datetime of the page had the stored form, and a page with one that had not is read
into records instead (`listing_page`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Boolean, DateTime, Integer, Numeric, String, Text
from sqlalchemy.types import TypeEngine

from .._db.base import UtcDateTime


def _sqlite_datetime(column: str) -> str:
    # SQLAlchemy stores 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC, no offset).
    whole = f"substr({column}, 1, 10) || 'T' || substr({column}, 12, 8)"
    return (
        f"CASE WHEN {column} IS NULL THEN NULL "
        f"WHEN substr({column}, 21, 6) = '000000' THEN {whole} || 'Z' "
        f"ELSE {whole} || '.' || substr({column}, 21, 6) || 'Z' END"
    )


def _postgres_datetime(column: str) -> str:
    # The colons escaped: SQLAlchemy's `text` reads `:name` as a parameter.
    utc = f"{column} AT TIME ZONE 'UTC'"
    return (
        f"CASE WHEN {column} IS NULL THEN NULL "
        f"WHEN extract(microseconds FROM {column})::bigint % 1000000 = 0 "
        f"""THEN to_char({utc}, 'YYYY-MM-DD"T"HH24\\:MI\\:SS') || 'Z' """
        f"""ELSE to_char({utc}, 'YYYY-MM-DD"T"HH24\\:MI\\:SS.US') || 'Z' END"""
    )


def _canonical(column: str) -> str:
    return f"({column} IS NULL OR (length({column}) = 26 AND substr({column}, 20, 1) = '.'))"


def _boolean(condition: str) -> str:
    return f"CASE WHEN {condition} THEN 'true' ELSE 'false' END"


def _value(dialect: str, column: str, kind: TypeEngine[Any]) -> str:
    """The JSON value of `column`, as the API writes a value of its type."""
    postgres = dialect == "postgresql"
    if isinstance(kind, UtcDateTime | DateTime):
        return _postgres_datetime(column) if postgres else _sqlite_datetime(column)
    if isinstance(kind, Numeric) and kind.asdecimal:
        if kind.scale is None:
            raise TypeError(f"{column}: a Numeric without a scale has no fixed form")
        if postgres:  # a numeric of this scale written as text: what `str(Decimal)` gives
            return f"{column}::text"
        return f"CASE WHEN {column} IS NULL THEN NULL ELSE printf('%.{kind.scale}f', {column}) END"
    if isinstance(kind, Boolean):  # PostgreSQL's are JSON booleans as they are
        if postgres:
            return column
        return f"CASE WHEN {column} IS NULL THEN NULL ELSE json({_boolean(column)}) END"
    if isinstance(kind, Integer | String | Text):  # Text and String: Enum-like strings too
        return column
    raise TypeError(f"{column}: no JSON form for {kind!r}")


def _json(dialect: str, literal: str) -> str:
    """`literal` (SQL text holding JSON) as a JSON value, not a string."""
    return f"({literal})::json" if dialect == "postgresql" else f"json({literal})"


def _postgres_array(values: Sequence[str], order: str) -> str:
    rows = f"json_agg(json_build_object({', '.join(values)}) ORDER BY {order})"
    return f"coalesce({rows}, '[]'::json)::text"


def _values(
    dialect: str, fields: Sequence[str], columns: Sequence[str], types: Sequence[TypeEngine[Any]]
) -> list[str]:
    """`json_object`'s arguments: each field's name and JSON value, `likely` last."""
    values = [
        f"'{field}', {_value(dialect, column, kind)}"
        for field, column, kind in zip(fields, columns, types, strict=True)
    ]
    state, evidence = columns[fields.index("state")], columns[fields.index("state_evidence")]
    likely = _json(dialect, _boolean(f"{state} = 'sold' AND {evidence} = 'absence'"))
    values.append(f"'likely', {likely}")
    return values


def postgres_page_json_sql(
    page_sql: str,
    fields: Sequence[str],
    columns: Sequence[str],
    types: Sequence[TypeEngine[Any]],
) -> str:
    """PostgreSQL: `page_json_sql`'s array alone, as a scalar subquery's SQL (one column, one
    row; every datetime PostgreSQL holds is typed, so there is no form to check)."""
    array = _postgres_array(_values("postgresql", fields, columns, types), columns[0])
    return f"SELECT {array} FROM ({page_sql}) AS page"


def page_json_sql(
    dialect: str,
    page_sql: str,
    fields: Sequence[str],
    columns: Sequence[str],
    types: Sequence[TypeEngine[Any]],
) -> str:
    """SQL over `page_sql` (whose result names its columns `columns`, one per record field
    of `fields`, of `types`, and is ordered by the first) answering one row: the page's
    listings as a JSON array of `listing_out` objects, and 1 if every datetime in it had
    the stored form (0 if not, NULL for no rows; PostgreSQL's are typed: always 1)."""
    values = _values(dialect, fields, columns, types)
    if dialect == "postgresql":
        return f"SELECT {_postgres_array(values, columns[0])}, 1 FROM ({page_sql}) AS page"
    dated = [
        _canonical(column)
        for column, kind in zip(columns, types, strict=True)
        if isinstance(kind, UtcDateTime | DateTime)
    ]
    canonical = " AND ".join(dated) or "1"
    return (
        f"SELECT json_group_array(json_object({', '.join(values)})), "
        f"min(CASE WHEN {canonical} THEN 1 ELSE 0 END) FROM ({page_sql})"
    )
