"""Reads for the hottest requests, handed to the driver as SQL compiled once, whose rows are
typed by the columns' own result processors.

A listings page through SQLAlchemy's typed results cost about three times what the driver
spends on it (measured in one process: 1.5 ms for the unit against 0.55 ms for the same
statements on the raw cursor): per execution a statement is built, a cache key computed,
and every value of every row passes through the `Row` machinery. A `DriverRead` does each
of those once: its SQL is compiled per dialect the first time it runs (parameter style and
order included), and each row is typed by the processors SQLAlchemy itself would have
applied (`TypeEngine.result_processor` of the declared columns, so `UtcDateTime`'s parse on
SQLite, numerics to `Decimal`, booleans), only on the columns that have one.
`tests/store/test_driver_reads.py` holds the two paths equal on both databases.

The statement runs on the session's connection, in the unit's transaction, on a cursor of
the driver's own: SQLAlchemy's `exec_driver_sql` still built a result's metadata (each
column's name and processor) and a `Row` per row on every execution, which on PostgreSQL
cost a listings page about a tenth of its CPU. What SQLAlchemy does around a cursor is done
here too: a driver error is raised as SQLAlchemy's (`DBAPIError.instance`), and a
connection the dialect finds dead is dropped with every other the pool held, so that `Unit`
answers `DatabaseUnavailable` and the units after it get fresh connections
(`tests/store/test_driver_reads.py`). SQLAlchemy's cursor events (`before_cursor_execute`)
and its echo log do not see these statements.

Many rows on SQLite come in one step: sqlite3 lets go of the GIL around every step of a
statement, once per row, and with worker threads beside the Trio thread each row became a
GIL hand-off. A read that names its columns (`names`) is asked on SQLite as one JSON array
of every row (`json_group_array`, a single step), which orjson parses. JSON keeps SQLite's
integers, text and NULLs as they are, but writes a REAL with 15 significant digits, so a
column typed `Float` (or binary) is refused there; `Numeric` columns (SQLite stores them as
REAL) are rounded to their scale by their processor anyway.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson
from sqlalchemy import Connection, Dialect, Float, LargeBinary, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from sqlalchemy.types import TypeEngine

R = TypeVar("R")
log = logging.getLogger(__name__)
Processor = Callable[[Any], Any]
# What a read runs on: a unit's session, or a glance's connection (`Unit.glance`).
Reader = Session | Connection


def dialect_name(db: Reader) -> str:
    return db.dialect.name if isinstance(db, Connection) else db.get_bind().dialect.name


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    positions: tuple[str, ...] | None  # parameter names in order, for a positional driver
    as_json: bool  # the rows come as one JSON array, in the one column of one row


# (column index, its processor), for the columns that have one.
Processors = tuple[tuple[int, Processor], ...]


class DriverRead(Generic[R]):
    """`sql` (SQLAlchemy text with `:name` parameters) whose result columns have the types
    `types`, in order; each row becomes `make(*values)`. Build one per distinct SQL text, at
    import or in a bounded cache: the compiled form is kept per dialect.

    Parameters reach the driver as they are (no bind processing): give strings, integers
    and floats, which both drivers take alike.

    `names`, the result columns' names in order (unique), for a read of many rows: SQLite
    then hands them over in one step, as one JSON array (the module docstring)."""

    def __init__(
        self,
        sql: str,
        types: Sequence[TypeEngine[Any]],
        make: Callable[..., R],
        *,
        names: Sequence[str] = (),
    ):
        if names:
            if len(names) != len(types) or len(set(names)) != len(names):
                raise ValueError("one unique name for each declared column")
            inexact = [t for t in types if isinstance(t, Float | LargeBinary)]
            if inexact:
                raise ValueError(f"JSON cannot carry {inexact[0]!r} exactly")
        self._text = text(sql)
        self._types = tuple(types)
        self._make = make
        self._names = tuple(names)
        self._compiled: dict[tuple[str, str], _Compiled] = {}
        self._makers: dict[tuple[str, str], Callable[[Sequence[Any]], R]] = {}

    def all(self, db: Reader, params: Mapping[str, Any]) -> list[R]:
        """Every row, typed and made."""
        if isinstance(db, Session):
            db.flush()  # as the session's own queries do (autoflush): the unit's changes first
            connection = db.connection()
        else:  # a glance's (`Unit.glance`)
            connection = db
        dialect = connection.dialect
        compiled = self._compiled_for(dialect)
        made = self._makers.get(_key(dialect))
        # The description only to make the row maker, once per dialect.
        describe = made is None and not compiled.as_json
        description, rows = _execute(
            connection, compiled.sql, _bound(compiled, params), describe=describe
        )
        if compiled.as_json:
            rows = orjson.loads(rows[0][0])
        if made is None:
            if compiled.as_json:  # SQLite types no column: the names alone describe them
                description = [(name, None) for name in self._names]
            made = self._maker_for(dialect, description)
        return [made(row) for row in rows]

    def first(self, db: Reader, params: Mapping[str, Any]) -> R | None:
        """The first row, or None: for SQL that finds one row at most (it reads them all)."""
        found = self.all(db, params)
        return found[0] if found else None

    def _compiled_for(self, dialect: Dialect) -> _Compiled:
        compiled = self._compiled.get(_key(dialect))
        if compiled is None:
            statement = self._text.compile(dialect=dialect)
            positional = dialect.positional
            as_json = bool(self._names) and dialect.name == "sqlite"
            sql = statement.string
            if as_json:
                # An aggregate over a subquery with ORDER BY reads it in that order (SQLite
                # never flattens such a subquery into an aggregate); no rows give '[]'.
                sql = f"SELECT json_group_array(json_array({', '.join(self._names)})) FROM ({sql})"
            compiled = _Compiled(
                sql=sql,
                positions=tuple(statement.positiontup or ()) if positional else None,
                as_json=as_json,
            )
            # Set once per dialect; two threads compiling at once write equal values.
            self._compiled[_key(dialect)] = compiled
        return compiled

    def _maker_for(
        self, dialect: Dialect, description: Sequence[Any]
    ) -> Callable[[Sequence[Any]], R]:
        """A row's record, each column through what SQLAlchemy would apply to it: a
        processor may depend on the type the driver reports (PostgreSQL's numerics do), so
        it is chosen from the first result's description, as SQLAlchemy does for every
        result."""
        if len(description) != len(self._types):
            raise ValueError(f"{len(description)} columns read, {len(self._types)} declared")
        processors: list[tuple[int, Processor]] = []
        for at, (column_type, column) in enumerate(zip(self._types, description, strict=True)):
            process = column_type.dialect_impl(dialect).result_processor(dialect, column[1])
            if process is not None:
                processors.append((at, process))
        made = self._makers[_key(dialect)] = _row_maker(
            self._make, len(self._types), tuple(processors)
        )
        return made


def _row_maker(
    make: Callable[..., R], width: int, processors: Processors
) -> Callable[[Sequence[Any]], R]:
    """`make` of a row's values, each column with a processor through it, as one function
    written for these columns (as `dataclasses` writes `__init__`): a loop over the
    processors copying each row into a list cost a listings page a tenth of a millisecond.
    The source holds only column positions; the callables are passed in its namespace."""
    if not processors:
        return lambda row: make(*row)
    namespace: dict[str, Any] = {"make": make}
    for at, process in processors:
        namespace[f"p{at}"] = process
    values = ", ".join(
        f"p{i}(row[{i}])" if f"p{i}" in namespace else f"row[{i}]" for i in range(width)
    )
    exec(f"def made(row):\n    return make({values})\n", namespace)
    made: Callable[[Sequence[Any]], R] = namespace["made"]
    return made


def _key(dialect: Dialect) -> tuple[str, str]:
    """What the compiled SQL and the processors depend on: the database and its driver."""
    return dialect.name, dialect.driver


def record_columns(
    model: type[Any], names: Sequence[str], alias: str
) -> tuple[list[str], list[TypeEngine[Any]]]:
    """The SQL that selects `model`'s mapped attributes `names` (a record's fields) from its
    table under `alias`, and their types, in that order. Each is named `<alias>_<column>`
    (`result_names`), so that a join's columns keep distinct names in a subquery."""
    columns = model.__mapper__.columns
    in_sql = [f"{alias}.{columns[n].name}" for n in names]
    named = [
        f"{column} AS {name}"
        for column, name in zip(in_sql, result_names(model, names, alias), strict=True)
    ]
    return named, [columns[name].type for name in names]


def result_names(model: type[Any], names: Sequence[str], alias: str) -> list[str]:
    """The names `record_columns` gives the same columns in a result."""
    columns = model.__mapper__.columns
    return [f"{alias}_{columns[n].name}" for n in names]


def _execute(
    connection: Connection, sql: str, params: Any, *, describe: bool
) -> tuple[Any, Sequence[Any]]:
    """The result's description (with `describe`, else None) and rows, from a cursor of the
    driver's own on the unit's connection. psycopg makes a column object per column each
    time a cursor's description is asked for: on PostgreSQL's dashboard that was a twentieth
    of its CPU. As SQLAlchemy's `Connection` does around its cursor: a driver error is
    raised as SQLAlchemy's, and when the dialect says the connection is dead it is dropped
    with every other connection the pool held (a server restart ends them all), so each
    unit after this one connects afresh."""
    dialect = connection.dialect
    dbapi_connection = connection.connection.dbapi_connection
    assert dbapi_connection is not None  # a connection in a transaction has one
    cursor = None
    try:
        cursor = dbapi_connection.cursor()
        cursor.execute(sql, params)
        description = cursor.description if describe else None
        if describe and description is None:
            raise ValueError("a DriverRead's SQL must return rows")
        return description, cursor.fetchall()
    except dialect.loaded_dbapi.Error as err:
        dead = dialect.is_disconnect(err, dbapi_connection, cursor)
        if dead:
            cursor = None  # closed with its connection
            connection.invalidate(err)
            connection.engine.dispose(close=False)  # the others: dropped when checked in
        raise DBAPIError.instance(
            sql, params, err, dialect.loaded_dbapi.Error,
            connection_invalidated=dead, dialect=dialect,
        ) from err  # fmt: skip
    finally:
        if cursor is not None:
            _close_quietly(cursor)


def _close_quietly(cursor: Any) -> None:
    """Close `cursor`; an error closing it says nothing about what was read, and must not
    replace the error being raised (SQLAlchemy's cursors are closed the same way)."""
    try:
        cursor.close()
    except Exception:
        log.debug("closing a driver cursor failed", exc_info=True)


def _bound(compiled: _Compiled, params: Mapping[str, Any]) -> Any:
    if compiled.positions is None:
        return dict(params)
    return tuple(params[name] for name in compiled.positions)
