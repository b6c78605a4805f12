"""Evidence of state changes, likely sales by absence, today's listing fields, failed-poll
kinds, the opt-in to rank on likely sales, and the market profile memory.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 10:00:00.000000

Columns are appended (the listings page reads `SELECT *` by position: the models list them in
this order). Rows written before this revision got every non-open state from the item detail
API (the only source then): their listings and state events are marked `detail_api`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store._db.base import UtcDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("monitors", schema=None) as batch_op:
        batch_op.add_column(sa.Column("last_error_kind", sa.String(32), nullable=True))
        batch_op.add_column(
            sa.Column("likely_sold_count", sa.Integer(), nullable=False, server_default="0")
        )
    with op.batch_alter_table("listings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("condition_raw", sa.String(100), nullable=True))
        batch_op.add_column(sa.Column("category_name", sa.String(200), nullable=True))
        batch_op.add_column(sa.Column("total_price", sa.Numeric(12, 2), nullable=True))
        batch_op.add_column(sa.Column("service_fee", sa.Numeric(12, 2), nullable=True))
        batch_op.add_column(
            sa.Column("promoted", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(sa.Column("state_evidence", sa.String(16), nullable=True))
        batch_op.add_column(
            sa.Column("absent_polls", sa.Integer(), nullable=False, server_default="0")
        )
    with op.batch_alter_table("listing_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("evidence", sa.String(16), nullable=True))
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "include_likely_sales", sa.Boolean(), nullable=False, server_default=sa.false()
            )
        )
    op.create_table(
        "market_profiles",
        sa.Column("origin", sa.String(300), primary_key=True),
        sa.Column("profile", sa.String(32), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
    )
    op.execute(
        "UPDATE listings SET state_evidence = 'detail_api' "
        "WHERE state IN ('reserved', 'sold', 'deleted')"
    )
    op.execute(
        "UPDATE listing_events SET evidence = 'detail_api' "
        "WHERE kind = 'state' AND to_state IN ('reserved', 'sold', 'deleted')"
    )


def downgrade() -> None:
    op.drop_table("market_profiles")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("include_likely_sales")
    with op.batch_alter_table("listing_events", schema=None) as batch_op:
        batch_op.drop_column("evidence")
    with op.batch_alter_table("listings", schema=None) as batch_op:
        for name in (
            "absent_polls",
            "state_evidence",
            "promoted",
            "service_fee",
            "total_price",
            "category_name",
            "condition_raw",
        ):
            batch_op.drop_column(name)
    with op.batch_alter_table("monitors", schema=None) as batch_op:
        batch_op.drop_column("likely_sold_count")
        batch_op.drop_column("last_error_kind")
