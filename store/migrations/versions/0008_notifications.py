"""Notifications: channels, rules, the outbox and the delivery log; listings remember their
seller's login and whether the seller is a business (rules filter on both).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 06:00:00.000000

The listing columns are appended (the listings page reads `SELECT *` by position: the model
lists them in this order). Listings seen before this revision keep NULL until seen again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store._db.base import UtcDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("listings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("seller_login", sa.String(200), nullable=True))
        batch_op.add_column(sa.Column("seller_business", sa.Boolean(), nullable=True))

    op.create_table(
        "notification_channels",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("workspace_id", sa.String(40), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("hint", sa.String(300), nullable=False),
        sa.Column("secret_box", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.Text(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("failing_since", UtcDateTime(), nullable=True),
        sa.Column("last_success_at", UtcDateTime(), nullable=True),
        sa.Column("last_failure_at", UtcDateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("next_send_at", UtcDateTime(), nullable=True),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.Column("claim_until", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_notification_channels_workspace",
        "notification_channels",
        ["workspace_id", "created_at"],
    )

    op.create_table(
        "notification_rules",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("workspace_id", sa.String(40), nullable=False),
        sa.Column("monitor_id", sa.String(40), nullable=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("kinds", sa.JSON(), nullable=False),
        sa.Column("deal_ratio", sa.Float(), nullable=False),
        sa.Column("filters", sa.JSON(), nullable=False),
        sa.Column("channel_ids", sa.JSON(), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("digest_hour", sa.Integer(), nullable=False),
        sa.Column("quiet_start", sa.String(5), nullable=True),
        sa.Column("quiet_end", sa.String(5), nullable=True),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["monitor_id"], ["monitors.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_notification_rules_workspace", "notification_rules", ["workspace_id", "monitor_id"]
    )
    op.create_index("ix_notification_rules_monitor_id", "notification_rules", ["monitor_id"])

    op.create_table(
        "notifications",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("workspace_id", sa.String(40), nullable=False),
        sa.Column("monitor_id", sa.String(40), nullable=True),
        sa.Column("rule_id", sa.String(40), nullable=True),
        sa.Column("channel_id", sa.String(40), nullable=False),
        sa.Column("kind", sa.String(24), nullable=False),
        sa.Column("subject", sa.String(200), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("due_at", UtcDateTime(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UtcDateTime(), nullable=False),
        sa.Column("delivered_at", UtcDateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["monitor_id"], ["monitors.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["rule_id"], ["notification_rules.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["channel_id"], ["notification_channels.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "rule_id", "channel_id", "kind", "subject", name="uq_notifications_key"
        ),
    )
    op.create_index("ix_notifications_due", "notifications", ["status", "next_attempt_at"])
    op.create_index("ix_notifications_channel", "notifications", ["channel_id", "status"])
    op.create_index("ix_notifications_workspace", "notifications", ["workspace_id", "created_at"])

    op.create_table(
        "notification_deliveries",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(40), nullable=False),
        sa.Column("channel_id", sa.String(40), nullable=False),
        sa.Column("attempted_at", UtcDateTime(), nullable=False),
        sa.Column("notification_ids", sa.JSON(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("test", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["channel_id"], ["notification_channels.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_notification_deliveries_workspace", "notification_deliveries", ["workspace_id", "id"]
    )
    op.create_index(
        "ix_notification_deliveries_channel", "notification_deliveries", ["channel_id", "id"]
    )


def downgrade() -> None:
    op.drop_table("notification_deliveries")
    op.drop_table("notifications")
    op.drop_table("notification_rules")
    op.drop_table("notification_channels")
    with op.batch_alter_table("listings", schema=None) as batch_op:
        batch_op.drop_column("seller_business")
        batch_op.drop_column("seller_login")
