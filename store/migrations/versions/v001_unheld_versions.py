"""Versions of a listing's description that no monitor holds are dropped: an index finds who
holds a version, and the versions left by monitors deleted before this revision go.

Revision ID: v001
Revises: l001
Create Date: 2026-11-28 07:00:00.000000

From this revision a monitor's deletion drops the versions only it held, and a poll the
versions its monitor moved on from when no other monitor holds them
(`store/market/site_listings.py`, `drop_unheld`). The index makes "does any monitor hold
this version" one probe. The downgrade keeps the data (dropped versions were read by
nothing).
"""

from __future__ import annotations

from alembic import op

revision = "v001"
down_revision = "l001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_monitor_listings_description", "monitor_listings", ["description_id"])
    op.execute(
        "DELETE FROM site_listings WHERE NOT EXISTS ("
        "SELECT 1 FROM monitor_listings m WHERE m.description_id = site_listings.id)"
    )


def downgrade() -> None:
    op.drop_index("ix_monitor_listings_description", table_name="monitor_listings")
