"""Listings remember their place in the feed's publication order (`feed_rank`), which a monitor
judges its feed's window by instead of ids (ids are allotted when a draft is made, not when it
is published: MARKETPLACE.md, "Since 13 September 2026").

Revision ID: w001
Revises: 0008
Create Date: 2026-11-27 09:00:00.000000

The column is appended (the listings page reads `SELECT *` by position: the model lists the
columns in this order). Listings seen before this revision keep NULL, and no place is
guessed from their ids: the next poll places every listing its feed shows, in the feed's own
order, and until then a live listing without a place is never taken for one that left a
window the page cap cut (it may only be out of sight), so nothing is recorded sold on a
guess.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "w001"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("listings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("feed_rank", sa.BigInteger(), nullable=True))
    op.create_index("ix_listings_monitor_rank", "listings", ["monitor_id", "feed_rank"])


def downgrade() -> None:
    op.drop_index("ix_listings_monitor_rank", table_name="listings")
    with op.batch_alter_table("listings", schema=None) as batch_op:
        batch_op.drop_column("feed_rank")
