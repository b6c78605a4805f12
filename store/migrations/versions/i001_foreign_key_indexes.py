"""Every foreign key has an index that leads with its columns.

Revision ID: i001
Revises: v001
Create Date: 2026-11-28 14:00:00.000000

Without one, deleting the parent row makes the database scan the whole child table for the
rows its `ON DELETE CASCADE` removes: deleting a monitor read every alert ever queued, in
every workspace (`notifications.monitor_id`), and deleting a user or a workspace every
token, checkout session and user row. `tests/store/test_migrations.py` keeps the rule for
foreign keys added later.
"""

from __future__ import annotations

from alembic import op

revision = "i001"
down_revision = "v001"
branch_labels = None
depends_on = ("e001",)  # trial_tokens; e001 itself needs b001 (checkout_sessions)

# (index, table, column): one per foreign key that had none.
INDEXES = (
    ("ix_notifications_monitor", "notifications", "monitor_id"),
    ("ix_users_workspace", "users", "workspace_id"),
    ("ix_access_tokens_workspace", "access_tokens", "workspace_id"),
    ("ix_checkout_sessions_user", "checkout_sessions", "user_id"),
    ("ix_trial_tokens_user", "trial_tokens", "user_id"),
)


def upgrade() -> None:
    for name, table, column in INDEXES:
        op.create_index(name, table, [column])


def downgrade() -> None:
    for name, table, _ in INDEXES:
        op.drop_index(name, table_name=table)
