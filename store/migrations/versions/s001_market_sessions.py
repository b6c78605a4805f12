"""Marketplace sessions, sealed: one per site, shared by every node of a cluster.

Revision ID: s001
Revises: 0001
Create Date: 2026-11-27 05:00:00.000000

A branch of its own (like billing): the table depends on no other.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store._db.base import UtcDateTime

revision = "s001"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "market_sessions",
        sa.Column("site", sa.String(300), primary_key=True),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=True),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("market_sessions")
