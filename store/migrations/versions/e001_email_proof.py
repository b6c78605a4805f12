"""Proven e-mail addresses: `users.email_verified_at`, `notification_channels.confirmed_at`,
the `email_confirmations` table of mailed links, and channel hints that hide the host.

Revision ID: e001
Revises: 0008 (and depends on b001, whose trial links count as proof)
Create Date: 2026-11-28 09:00:00.000000

What counts as proven for the rows already there, from what they hold:
- an account made through the identity provider (it has no password): proven when made, by
  the provider's verified e-mail;
- an account whose owner used a password reset link, or a trial link mailed to the account's
  own address: proven then;
- every other account stays unproven: its owner signs in as before, is asked to confirm the
  address, and gets no operator rights nor an identity provider's link until then.
Channels: webhooks, Discord and Telegram are their owner's own destinations (confirmed at
their creation); an e-mail channel's address is sealed, so nothing here can tell whether its
recipient is the owner: each waits for its recipient to confirm (the Alerts page sends the
link), and the alerts already queued for it wait with it.
Hints: a webhook's host and an e-mail's domain are cut to their registered name
(`https://*.example.com/…3f2a`), as new channels show them.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import sqlalchemy as sa
from alembic import op

from store._db.base import UtcDateTime

revision = "e001"
down_revision = "0008"
branch_labels = None
depends_on = ("b001",)

# The mask as this revision wrote it (engine/notifications/_destinations.py `mask_host` may
# change later; a migration keeps doing what it did).
_SECOND_LEVELS = frozenset({"ac", "co", "com", "edu", "go", "gov", "ne", "net", "or", "org"})


def _mask_host(host: str) -> str:
    if host.startswith("*."):
        return host
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    labels = host.split(".")
    under_registry = len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVELS
    keep = 3 if under_registry else 2
    return host if len(labels) <= keep else "*." + ".".join(labels[-keep:])


def _masked(kind: str, hint: str) -> str:
    if kind == "email" and "@" in hint:
        local, _, domain = hint.rpartition("@")
        return f"{local}@{_mask_host(domain)}"
    if kind == "webhook" and "://" in hint:
        parts = urlsplit(hint)
        host = parts.hostname or ""
        if ":" in host:
            return hint
        port = f":{parts.port}" if parts.port else ""
        rest = hint.split("://", 1)[1].partition("/")[2]
        return f"{parts.scheme}://{_mask_host(host)}{port}/{rest}"
    return hint


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("email_verified_at", UtcDateTime(), nullable=True))
    with op.batch_alter_table("notification_channels", schema=None) as batch_op:
        batch_op.add_column(sa.Column("confirmed_at", UtcDateTime(), nullable=True))
    op.create_table(
        "email_confirmations",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("user_id", sa.String(40), nullable=True),
        sa.Column("channel_id", sa.String(40), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("used_at", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["channel_id"], ["notification_channels.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_email_confirmations_user_id", "email_confirmations", ["user_id"])
    op.create_index("ix_email_confirmations_channel_id", "email_confirmations", ["channel_id"])
    _prove_what_was_proven()
    _mask_hints()


def _prove_what_was_proven() -> None:
    op.execute("UPDATE users SET email_verified_at = created_at WHERE password_hash IS NULL")
    for earliest in (
        "SELECT MIN(r.used_at) FROM password_resets r WHERE r.user_id = users.id"
        " AND r.used_at IS NOT NULL",
        "SELECT MIN(t.used_at) FROM trial_tokens t WHERE t.user_id = users.id"
        " AND t.email = users.email AND t.used_at IS NOT NULL",
    ):
        op.execute(
            f"UPDATE users SET email_verified_at = ({earliest})"
            f" WHERE email_verified_at IS NULL AND EXISTS ({earliest})"
        )
    op.execute("UPDATE notification_channels SET confirmed_at = created_at WHERE kind <> 'email'")


def _mask_hints() -> None:
    connection = op.get_bind()
    channels = sa.table(
        "notification_channels", sa.column("id"), sa.column("kind"), sa.column("hint")
    )
    rows = connection.execute(
        sa.select(channels.c.id, channels.c.kind, channels.c.hint).where(
            channels.c.kind.in_(("webhook", "email"))
        )
    ).all()
    for channel_id, kind, hint in rows:
        masked = _masked(str(kind), str(hint))
        if masked != hint:
            connection.execute(
                channels.update().where(channels.c.id == channel_id).values(hint=masked)
            )


def downgrade() -> None:
    # The hints stay masked: the hosts they showed are sealed with the rest of the secrets.
    op.drop_index("ix_email_confirmations_channel_id", table_name="email_confirmations")
    op.drop_index("ix_email_confirmations_user_id", table_name="email_confirmations")
    op.drop_table("email_confirmations")
    with op.batch_alter_table("notification_channels", schema=None) as batch_op:
        batch_op.drop_column("confirmed_at")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("email_verified_at")
