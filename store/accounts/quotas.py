"""Quotas the database enforces: the count and the write it limits in one transaction, which
concurrent writers of one workspace go through one at a time.

A count read in one transaction and the write in another let simultaneous requests all count
the same usage and all write (#33: 12 monitors started on a 2-monitor plan). Counting inside
the writing transaction is not enough on its own: under PostgreSQL's READ COMMITTED (the
isolation the Store runs at) each of two concurrent transactions counts from a snapshot
without the other's uncommitted row, so even one conditional statement, `INSERT ... SELECT
... WHERE (SELECT count(*) ...) < :limit`, lets both in. What orders them is a lock taken
before the count and held until the commit, on one row that every quota-limited write of a
workspace shares: the workspace's own.

- PostgreSQL: `SELECT ... FOR NO KEY UPDATE` on the workspace's row. A second writer waits at
  that statement until the first commits or rolls back; READ COMMITTED then gives its next
  statement, the count, a fresh snapshot, which holds the first writer's row. NO KEY UPDATE
  rather than UPDATE: the foreign-key check of any insert naming the workspace takes a KEY
  SHARE lock, which NO KEY UPDATE lets through, so only quota writers queue behind it.
- SQLite: `FOR UPDATE` is not SQLite's (SQLAlchemy leaves the clause out) and a read locks
  nothing. But a database has one writer at a time, from a transaction's first write to its
  end, so the lock is a write that changes nothing (`UPDATE workspaces SET name = name`),
  issued as the unit's first statement. A transaction whose first statement writes waits (the
  busy timeout) until it holds the writer lock on the newest snapshot, so it counts what the
  previous writer committed. (One that had read first would fail, "database is locked",
  instead of waiting: hence first.)

The lock lives for one short transaction: the count and one write. A refusal raises
`QuotaFull` inside the unit of work, which rolls back: nothing is written.
"""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from .._db.errors import QuotaFull
from .models import Workspace


def hold_workspace(db: Session, workspace_id: str) -> None:
    """Take the workspace's quota lock until the transaction ends (see the module docstring);
    call it before the transaction reads anything. Blocks (in the unit's worker thread) while
    another transaction holds it; a database outage raises as any statement does."""
    if db.get_bind().dialect.name == "postgresql":
        db.execute(
            select(Workspace.id).where(Workspace.id == workspace_id).with_for_update(key_share=True)
        )
    else:
        db.execute(
            update(Workspace)
            .where(Workspace.id == workspace_id)
            .values(name=Workspace.name)
            .execution_options(synchronize_session=False)
        )


def refuse_past(quota: str, limit: int, in_use: int, adding: int = 1) -> None:
    """`QuotaFull` when `adding` more to the `in_use` counted under the lock exceeds `limit`."""
    if in_use + adding > limit:
        raise QuotaFull(quota, limit, in_use)
