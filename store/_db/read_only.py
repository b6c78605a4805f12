"""Reads refuse writes: `Unit.read` and `Unit.glance` run outside a transaction, where a
write would commit at once, whatever the read did next.

SQLite's glance connection is `PRAGMA query_only`, always: the database refuses, at no cost.
Beyond it, the read engine can check the SQL each cursor is handed and refuse a write before
it is sent (`refuse_writes`). That check is on where reads are exercised, the test suite
(`check_reads_for_writes`, from `tests/conftest.py`), and off in a service: any listener on
an engine sends its every statement down SQLAlchemy's event path, 18 us of CPU more a
statement (measured on a glance of 46 us), 1-3% of a request for an assertion that code
already met in the suite."""

from __future__ import annotations

import functools
import re
from typing import Any

from sqlalchemy import Connection, Engine, event

_checking = False


def check_reads_for_writes(enabled: bool = True) -> None:
    """Check reads and glances for writes in the stores opened from now on (see above)."""
    global _checking
    _checking = enabled


def checking_reads() -> bool:
    return _checking


class WriteInARead(RuntimeError):
    """A write attempted in `Unit.read` or `Unit.glance`: a bug. Outside a transaction it
    would have committed at once, whatever the read did next, so it is refused before it
    reaches the database."""


# A statement that writes, wherever in it the write is (a CTE's, after a comment): its
# SQL as the driver receives it, once comments and quoted text are taken out.
_NOT_SQL = re.compile(r"/\*.*?\*/|--[^\n]*|'(?:[^']|'')*'", re.S)
_WRITES = re.compile(
    r"\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE\b.*?\bSET|DELETE\s+FROM|MERGE\s+INTO"
    r"|TRUNCATE|REPLACE\s+INTO)\b",
    re.I | re.S,
)


@functools.lru_cache(maxsize=4096)  # reads send a few hundred distinct statements at most
def _writes(sql: str) -> bool:
    return _WRITES.search(_NOT_SQL.sub(" ", sql)) is not None


def refuse_writes(engine: Engine) -> None:
    """Make every statement on `engine` that writes raise `WriteInARead` before it is sent:
    the SQL each cursor is handed (SQLAlchemy's statements, an ORM flush, text and
    `exec_driver_sql` alike), checked once per distinct statement. The engine is one reads
    and glances alone use; units keep their own, which writes. `DriverRead`s go to the
    driver past SQLAlchemy's events: they are reads by construction, SQL fixed in code."""

    @event.listens_for(engine, "before_cursor_execute")
    def _before_cursor_execute(
        _conn: Connection, _cursor: Any, statement: str, *_rest: Any
    ) -> None:
        if _writes(statement):
            raise WriteInARead(f"a read must not write: {statement[:80]!r}")
