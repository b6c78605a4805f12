"""A run's `include_likely_sales` may be NULL: the analysis chooses which sales count.

Revision ID: r001
Revises: 0006
Create Date: 2026-12-02 09:00:00.000000

NULL (what a new run stores when its caller says nothing) lets the analysis count likely
sales when no sale was confirmed in its window (the marketplace refused every confirming
source), and confirmed sales only otherwise. Runs made before keep `false`, confirmed sales
only, the default they were made under: replayed, they analyse as they did. A branch of its
own (see `store/_db/migrate.py`): it needs only the column 0006 added.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r001"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.alter_column(
            "include_likely_sales",
            existing_type=sa.Boolean(),
            nullable=True,
            server_default=None,
        )


def downgrade() -> None:
    op.execute("UPDATE runs SET include_likely_sales = false WHERE include_likely_sales IS NULL")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.alter_column(
            "include_likely_sales",
            existing_type=sa.Boolean(),
            nullable=False,
            server_default=sa.false(),
        )
