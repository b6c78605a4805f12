"""`UtcDateTime` on SQLite: what it reads back is the aware UTC time it was given, through
its one-call parse of the stored text and through the general path for any other text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from store._db.base import UtcDateTime

TIMES = [
    datetime(2026, 11, 28, 6, 50, tzinfo=UTC),
    datetime(2026, 11, 28, 6, 50, 1, 123456, tzinfo=UTC),
    datetime(2026, 3, 29, 1, 30, tzinfo=timezone(timedelta(hours=2))),  # another zone
    datetime(1, 1, 1, tzinfo=UTC),
]


def test_what_is_written_reads_back_aware_in_utc() -> None:
    engine = sa.create_engine("sqlite://")
    table = sa.Table("t", sa.MetaData(), sa.Column("at", UtcDateTime()))
    table.create(engine)
    with engine.begin() as db:
        db.execute(table.insert(), [{"at": t} for t in TIMES] + [{"at": None}])
        stored = db.execute(sa.text("SELECT at FROM t")).scalars().all()
        read = db.execute(sa.select(table.c.at)).scalars().all()
    assert all(len(s) == 26 for s in stored if s is not None)  # the fast path's shape
    assert read == [*TIMES, None]
    assert all(r.tzinfo is UTC for r in read if r is not None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-28 06:50:00.000000", datetime(2026, 11, 28, 6, 50, tzinfo=UTC)),
        ("2026-11-28 06:50:00", datetime(2026, 11, 28, 6, 50, tzinfo=UTC)),  # older writers
        ("2026-11-28T06:50:00.5", datetime(2026, 11, 28, 6, 50, 0, 500000, tzinfo=UTC)),
        # Text with its own offset keeps it (the same instant): never the fast path's +00:00.
        ("2026-11-28 07:50:00+01:00", datetime(2026, 11, 28, 6, 50, tzinfo=UTC)),
        ("2026-11-28 07:50:00.5+01:00", datetime(2026, 11, 28, 6, 50, 0, 500000, tzinfo=UTC)),
    ],
)
def test_stored_text_of_any_shape_is_read_as_the_same_instant(
    text: str, expected: datetime
) -> None:
    dialect = sqlite.dialect()
    parse = UtcDateTime().result_processor(dialect, None)
    assert parse is not None
    read = parse(text)
    assert read == expected
    assert read.tzinfo is not None
    assert read.utcoffset() == (expected.utcoffset() if "+" not in text else timedelta(hours=1))
