"""The declarative base every table derives from, and the column type for UTC datetimes.

The tables themselves live with their resource (`store/<resource>/models.py`);
`store/_tables.py` imports every one of them, for Alembic and for anything that needs the
whole schema on `Base.metadata`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, TypeDecorator
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend.

    SQLite stores no offset, so values come back naive; this type puts UTC back on the way
    out so that comparisons behave the same on SQLite and PostgreSQL.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        # SQLite keeps no offset: a time given in another zone would come back as UTC
        # wall-clock time, hours off (a marketplace's timestamps may carry their own offset).
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value

    def result_processor(
        self, dialect: Dialect, coltype: Any
    ) -> Callable[[Any], datetime | None] | None:
        """On SQLite, the stored text read in one step (`datetime.fromisoformat`, in C)
        instead of SQLAlchemy's parser and then `process_result_value`: a page of listings
        has 200 datetimes, and the two steps were a fifth of its cost.

        The text SQLAlchemy stores has no offset and always the same length; parsed with
        UTC's offset appended it comes back aware in one call (`datetime.replace` with a
        keyword costs six times the parse on Python 3.11)."""
        if dialect.name != "sqlite":
            return super().result_processor(dialect, coltype)

        def parse(value: Any) -> datetime | None:
            if value is None:
                return None
            if isinstance(value, str) and len(value) == _STORED_LENGTH and value[19] == ".":
                return datetime.fromisoformat(value + "+00:00")
            read = datetime.fromisoformat(value) if isinstance(value, str) else value
            return read if read.tzinfo is not None else read.replace(tzinfo=UTC)

        return parse


# "2026-11-28 06:50:00.000000": SQLAlchemy's SQLite storage format for a datetime (microseconds
# always written, so a dot at 19 and 26 characters leave no room for an offset).
_STORED_LENGTH = 26


class Base(DeclarativeBase):
    pass


class ViewBase(DeclarativeBase):
    """Read-only classes mapped on SQL views (made by migrations, which also own their
    definitions): kept off `Base.metadata`, so that nothing creates them as tables and the
    comparison of migrations with models leaves them out."""
