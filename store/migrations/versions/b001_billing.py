"""Billing: plans, billing accounts, checkout sessions, processed events, trials.

Revision ID: b001
Revises: 0001
Create Date: 2026-11-22 08:14:01.138784
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store._db.base import UtcDateTime

revision = "b001"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "plans",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("title", sa.String(length=100), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("stripe_price_id", sa.String(length=100), nullable=True),
        sa.Column("price_cents", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("interval", sa.String(length=16), nullable=True),
        sa.Column("purchasable", sa.Boolean(), nullable=False),
        sa.Column("active_monitors", sa.Integer(), nullable=False),
        sa.Column("runs_per_day", sa.Integer(), nullable=False),
        sa.Column("items_per_run", sa.Integer(), nullable=False),
        sa.Column("min_poll_seconds", sa.Integer(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "stripe_events",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("type", sa.String(length=100), nullable=False),
        sa.Column("received_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "billing_accounts",
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("plan", sa.String(length=32), nullable=True),
        sa.Column("status", sa.String(length=24), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=True),
        sa.Column("stripe_customer_id", sa.String(length=255), nullable=True),
        sa.Column("stripe_subscription_id", sa.String(length=255), nullable=True),
        sa.Column("current_period_end", UtcDateTime(), nullable=True),
        sa.Column("cancel_at_period_end", sa.Boolean(), nullable=False),
        sa.Column("trial_end", UtcDateTime(), nullable=True),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("workspace_id"),
        sa.UniqueConstraint("stripe_customer_id"),
    )
    op.create_table(
        "billing_changes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.Column("cause", sa.String(length=255), nullable=False),
        sa.Column("plan", sa.String(length=32), nullable=True),
        sa.Column("status", sa.String(length=24), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("billing_changes", schema=None) as batch_op:
        batch_op.create_index("ix_billing_changes_workspace", ["workspace_id", "id"], unique=False)

    op.create_table(
        "trial_claims",
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("claimed_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("email"),
        sa.UniqueConstraint("workspace_id"),
    )
    op.create_table(
        "checkout_sessions",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("plan", sa.String(length=32), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("fulfilled_at", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("checkout_sessions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_checkout_sessions_workspace", ["workspace_id", "created_at"], unique=False
        )

    op.create_table(
        "trial_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("used_at", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    with op.batch_alter_table("trial_tokens", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_trial_tokens_workspace_id"), ["workspace_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("trial_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_trial_tokens_workspace_id"))

    op.drop_table("trial_tokens")
    with op.batch_alter_table("checkout_sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_checkout_sessions_workspace")

    op.drop_table("checkout_sessions")
    op.drop_table("trial_claims")
    with op.batch_alter_table("billing_changes", schema=None) as batch_op:
        batch_op.drop_index("ix_billing_changes_workspace")

    op.drop_table("billing_changes")
    op.drop_table("billing_accounts")
    op.drop_table("stripe_events")
    op.drop_table("plans")
