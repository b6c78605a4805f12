"""Polls remember the market's clock: when the marketplace said the poll looked (`market_at`)
and which clock stamped the poll's observations (`clock`: "market" or "service").

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 22:00:00.000000

Polls written before this revision stamped on the service's clock; they keep NULL in both
columns, which readers take as "service".
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store._db.base import UtcDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("polls", schema=None) as batch_op:
        batch_op.add_column(sa.Column("market_at", UtcDateTime(), nullable=True))
        batch_op.add_column(sa.Column("clock", sa.String(8), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("polls", schema=None) as batch_op:
        batch_op.drop_column("clock")
        batch_op.drop_column("market_at")
