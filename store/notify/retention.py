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


def drop_old_deliveries(
    db: Session, before: datetime, after: int = 0, limit: int = 5000
) -> tuple[int, int] | None:
    """One step of the housekeeping: the oldest rows of the log above id `after`, attempted
    before `before`, up to `limit` of them, deleted; (the last id deleted, how many went),
    or None when the oldest row left is younger. Pass the last id on to the next step.

    Rows are walked by id, the order they were written in, which is the order they were
    attempted in, from the last step's end (the rows it deleted stay in the index until
    vacuumed, and while an older snapshot is open they would be walked again by every step
    that started from the head). A step stops at the first younger row, so a round costs
    what it deletes and never walks the rest of the log (an index on `attempted_at` would
    cost every attempt a write more). A row written out of order (clocks of two nodes
    apart) waits for the rows before it to age: a round late."""
    rows = db.execute(
        select(_D.id, _D.attempted_at).where(_D.id > after).order_by(_D.id).limit(limit)
    ).all()
    last_old: int | None = None
    for row_id, attempted_at in rows:
        if attempted_at >= before:
            break
        last_old = row_id
    if last_old is None:
        return None
    # The age again: a row another transaction wrote meanwhile with an id it had drawn
    # before ours (PostgreSQL's sequences) is young, and stays.
    gone = db.execute(delete(_D).where(_D.id > after, _D.id <= last_old, _D.attempted_at < before))
    return last_old, rows_changed(gone)
