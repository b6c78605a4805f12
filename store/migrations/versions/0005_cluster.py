"""Cluster mode: leases on monitors and runs, the nodes table, commands between nodes.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 19:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store._db.base import UtcDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

LEASED = ("monitors", "runs")


def upgrade() -> None:
    for table in LEASED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("lease_owner", sa.String(200), nullable=True))
            batch_op.add_column(
                sa.Column("lease_token", sa.BigInteger(), nullable=False, server_default="0")
            )
            batch_op.add_column(sa.Column("lease_expires_at", UtcDateTime(), nullable=True))
            batch_op.create_index(f"ix_{table}_lease_owner", ["lease_owner"])
    op.create_table(
        "nodes",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(40), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("heartbeat_at", UtcDateTime(), nullable=False),
        sa.Column("monitors", sa.Integer(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("actors", sa.Text(), nullable=False),
    )
    op.create_index("ix_nodes_heartbeat_at", "nodes", ["heartbeat_at"])
    op.create_table(
        "cluster_commands",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("target_kind", sa.String(16), nullable=False),
        sa.Column("target_id", sa.String(40), nullable=False),
        sa.Column("command", sa.String(16), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_cluster_commands_target", "cluster_commands", ["target_id"])


def downgrade() -> None:
    op.drop_table("cluster_commands")
    op.drop_table("nodes")
    for table in LEASED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(f"ix_{table}_lease_owner")
            batch_op.drop_column("lease_expires_at")
            batch_op.drop_column("lease_token")
            batch_op.drop_column("lease_owner")
