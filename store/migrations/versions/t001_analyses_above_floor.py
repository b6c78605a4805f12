"""An index of the analyses above the trust floor, per workspace, newest last.

Revision ID: t001
Revises: d001
Create Date: 2026-11-28 17:00:00.000000

The dashboard shows the newest analysis above the trust floor (d001). With only
`ix_analyses_workspace`, finding it walked the workspace's analyses newest first until one
cleared the floor: all of them, for a workspace whose analyses all lie below it. A partial
index of the analyses above the floor makes it one seek, so the dashboard's read costs the
same however many analyses a workspace keeps, and can be a glance on SQLite's Trio thread.
The floor's figures are written here as they were (`store.runs.models.INDEXED_FLOOR_*`):
a floor that changes needs a migration of its own, which a test asks for.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "t001"
down_revision = "d001"
branch_labels = None
depends_on = None

ABOVE_FLOOR = "window_days >= 7.0 AND sales >= 30"


def upgrade() -> None:
    op.create_index(
        "ix_analyses_above_floor",
        "analyses",
        ["workspace_id", "created_at"],
        sqlite_where=sa.text(ABOVE_FLOOR),
        postgresql_where=sa.text(ABOVE_FLOOR),
    )


def downgrade() -> None:
    op.drop_index("ix_analyses_above_floor", table_name="analyses")
