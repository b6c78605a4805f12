"""SQLite: an analysis' document is stored last in its row.

Revision ID: t002
Revises: t001
Create Date: 2026-11-28 20:30:00.000000

An analysis' document (`result`) is hundreds of kilobytes; the columns added after it (d001:
`source_label`, `window_days`, `sales`) sat behind it in each row. SQLite keeps what does
not fit in a row's page on a chain of overflow pages, and to read a column behind the
document it walks that chain: about 140 pages for a 560 KB document, 0.15 ms a row, paid by
the dashboard (up to three analyses on every request) and by the list of analyses (9 ms of a
10 ms page of 50). With the document last, every other column is in the row's own page.

The table is rebuilt with the same columns, keys and indexes (Alembic's batch mode, every row
copied once: a database with many large analyses takes a while, once). PostgreSQL is left as
it is: it keeps a large value out of the row (TOAST) whatever the columns' order.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "t002"
down_revision = "t001"
branch_labels = None
depends_on = None

ABOVE_FLOOR = "window_days >= 7.0 AND sales >= 30"  # as t001 wrote it


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    columns = [c["name"] for c in sa.inspect(bind).get_columns("analyses")]
    if columns[-1] == "result":
        return
    # The partial index is made again by hand: the batch copies the indexes it reflects, and
    # a reflected partial index may come back without its predicate.
    op.drop_index("ix_analyses_above_floor", table_name="analyses")
    ordered = (*(c for c in columns if c != "result"), "result")
    with op.batch_alter_table("analyses", recreate="always", partial_reordering=[ordered]):
        pass
    op.create_index(
        "ix_analyses_above_floor",
        "analyses",
        ["workspace_id", "created_at"],
        sqlite_where=sa.text(ABOVE_FLOOR),
    )


def downgrade() -> None:
    """Nothing to undo: the columns' order means nothing to the schema."""
