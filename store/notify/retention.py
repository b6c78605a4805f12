"""How long the delivery log is kept: `DELIVERY_LOG_KEPT`, after which the engine's
housekeeping (`engine/_janitor.py`) deletes an attempt's row. Without it every batch sent,
every retry and every test would stay a row for good, and a busy channel's log grows with
every alert. Alerts themselves are kept: the outbox's unique key is what keeps an alert from
being sent twice."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from .._db.rows import rows_changed
from .models import NotificationDelivery

DELIVERY_LOG_KEPT = timedelta(days=90)

_D = NotificationDelivery


def drop_old_deliveries(db: Session, before: datetime, limit: int = 5000) -> int | None:
    """One step of the housekeeping: the oldest rows of the log, attempted before `before`,
    up to `limit` of them, deleted; how many, or None when the oldest row left is younger.

    Rows are walked by id, the order they were written in, which is the order they were
    attempted in: a step reads at most `limit` entries of the primary key and stops at the
    first younger row, so the round costs what it deletes and never walks the whole log (an
    index on `attempted_at` would cost every attempt a write more). A row written out of
    order (clocks of two nodes apart) waits for the rows before it to age: a round late."""
    rows = db.execute(select(_D.id, _D.attempted_at).order_by(_D.id).limit(limit)).all()
    last_old: int | None = None
    for row_id, attempted_at in rows:
        if attempted_at >= before:
            break
        last_old = row_id
    if last_old is None:
        return None
    # The age again: a row another transaction wrote meanwhile with an id it had drawn
    # before ours (PostgreSQL's sequences) is young, and stays.
    return rows_changed(db.execute(delete(_D).where(_D.id <= last_old, _D.attempted_at < before)))
