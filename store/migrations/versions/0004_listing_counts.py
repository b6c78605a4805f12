"""Monitors keep their listing counts per state, so pages and details never COUNT(*).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 15:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

STATES = ("open", "reserved", "sold", "deleted")


def upgrade() -> None:
    with op.batch_alter_table("monitors", schema=None) as batch_op:
        for state in STATES:
            batch_op.add_column(
                sa.Column(f"{state}_count", sa.Integer(), nullable=False, server_default="0")
            )
    # Backfill from the listings already held (one correlated count per state).
    for state in STATES:
        op.execute(
            sa.text(
                f"UPDATE monitors SET {state}_count = (SELECT count(*) FROM listings "
                "WHERE listings.monitor_id = monitors.id AND listings.state = :state)"
            ).bindparams(state=state)
        )


def downgrade() -> None:
    with op.batch_alter_table("monitors", schema=None) as batch_op:
        for state in STATES:
            batch_op.drop_column(f"{state}_count")
