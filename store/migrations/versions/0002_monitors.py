"""Monitors: monitors, listings, listing events, polls.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 07:55:02.630419
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store._db.base import UtcDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "monitors",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("source_analysis_id", sa.String(length=40), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("interval_seconds", sa.Integer(), nullable=False),
        sa.Column("page_cap", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("bootstrapped_at", UtcDateTime(), nullable=True),
        sa.Column("last_poll_at", UtcDateTime(), nullable=True),
        sa.Column("next_poll_at", UtcDateTime(), nullable=True),
        sa.Column("consecutive_errors", sa.Integer(), nullable=False),
        sa.Column("total_errors", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("polls", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("monitors", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_monitors_status"), ["status"], unique=False)
        batch_op.create_index("ix_monitors_workspace", ["workspace_id", "created_at"], unique=False)

    op.create_table(
        "listing_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("monitor_id", sa.String(length=40), nullable=False),
        sa.Column("item_id", sa.BigInteger(), nullable=False),
        sa.Column("poll_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("from_state", sa.String(length=16), nullable=True),
        sa.Column("to_state", sa.String(length=16), nullable=True),
        sa.Column("price", sa.Numeric(precision=12, scale=2), nullable=True),
        sa.Column("favourites", sa.Integer(), nullable=True),
        sa.Column("views", sa.Integer(), nullable=True),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["monitor_id"], ["monitors.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("listing_events", schema=None) as batch_op:
        batch_op.create_index("ix_listing_events_monitor", ["monitor_id", "id"], unique=False)

    op.create_table(
        "listings",
        sa.Column("monitor_id", sa.String(length=40), nullable=False),
        sa.Column("item_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("brand", sa.String(length=200), nullable=True),
        sa.Column("size", sa.String(length=100), nullable=True),
        sa.Column("condition", sa.String(length=100), nullable=True),
        sa.Column("category_id", sa.Integer(), nullable=True),
        sa.Column("price", sa.Numeric(precision=12, scale=2), nullable=True),
        sa.Column("currency", sa.String(length=8), nullable=True),
        sa.Column("favourites", sa.Integer(), nullable=True),
        sa.Column("views", sa.Integer(), nullable=True),
        sa.Column("seller_id", sa.BigInteger(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("photo_url", sa.Text(), nullable=True),
        sa.Column("listed_at", UtcDateTime(), nullable=True),
        sa.Column("first_seen_at", UtcDateTime(), nullable=False),
        sa.Column("last_seen_at", UtcDateTime(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("state_changed_at", UtcDateTime(), nullable=False),
        sa.Column("in_feed", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["monitor_id"], ["monitors.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("monitor_id", "item_id"),
    )
    with op.batch_alter_table("listings", schema=None) as batch_op:
        batch_op.create_index(
            "ix_listings_monitor_state", ["monitor_id", "state", "item_id"], unique=False
        )

    op.create_table(
        "polls",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("monitor_id", sa.String(length=40), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("finished_at", UtcDateTime(), nullable=False),
        sa.Column("pages", sa.Integer(), nullable=False),
        sa.Column("items", sa.Integer(), nullable=False),
        sa.Column("new", sa.Integer(), nullable=False),
        sa.Column("changed", sa.Integer(), nullable=False),
        sa.Column("confirmed", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["monitor_id"], ["monitors.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("polls", schema=None) as batch_op:
        batch_op.create_index("ix_polls_monitor", ["monitor_id", "started_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("polls", schema=None) as batch_op:
        batch_op.drop_index("ix_polls_monitor")

    op.drop_table("polls")
    with op.batch_alter_table("listings", schema=None) as batch_op:
        batch_op.drop_index("ix_listings_monitor_state")

    op.drop_table("listings")
    with op.batch_alter_table("listing_events", schema=None) as batch_op:
        batch_op.drop_index("ix_listing_events_monitor")

    op.drop_table("listing_events")
    with op.batch_alter_table("monitors", schema=None) as batch_op:
        batch_op.drop_index("ix_monitors_workspace")
        batch_op.drop_index(batch_op.f("ix_monitors_status"))

    op.drop_table("monitors")
