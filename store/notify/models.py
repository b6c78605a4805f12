"""Tables of notifications: channels (where alerts go), rules (what is alerted on), the
outbox (one row per alert per channel) and the delivery log (one row per attempt)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from .._db.base import Base, UtcDateTime


class NotificationChannel(Base):
    __tablename__ = "notification_channels"
    __table_args__ = (Index("ix_notification_channels_workspace", "workspace_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(200))
    hint: Mapped[str] = mapped_column(String(300))
    # Ciphertext from the engine's SecretBox: the store never sees the destination's secrets.
    secret_box: Mapped[str] = mapped_column(Text)
    enabled: Mapped[bool] = mapped_column(Boolean)
    disabled_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    failing_since: Mapped[datetime | None] = mapped_column(UtcDateTime())
    last_success_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    last_failure_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    last_error: Mapped[str | None] = mapped_column(Text)
    next_send_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # The dispatcher node sending this channel's batch, until when: what keeps two nodes
    # from sending the same channel's notifications at once.
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    claim_until: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # When the destination's owner agreed to receive alerts (an e-mail channel's recipient
    # opens a mailed link; other kinds at creation): nothing is queued or sent before.
    confirmed_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class NotificationRule(Base):
    __tablename__ = "notification_rules"
    __table_args__ = (Index("ix_notification_rules_workspace", "workspace_id", "monitor_id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    # None: a workspace default, for monitors with no enabled rule of their own.
    monitor_id: Mapped[str | None] = mapped_column(
        ForeignKey("monitors.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    kinds: Mapped[list[str]] = mapped_column(JSON)
    deal_ratio: Mapped[float] = mapped_column(Float)
    filters: Mapped[dict[str, Any]] = mapped_column(JSON)
    channel_ids: Mapped[list[str]] = mapped_column(JSON)
    mode: Mapped[str] = mapped_column(String(16))
    digest_hour: Mapped[int] = mapped_column(Integer)
    quiet_start: Mapped[str | None] = mapped_column(String(5))
    quiet_end: Mapped[str | None] = mapped_column(String(5))
    timezone: Mapped[str] = mapped_column(String(64))
    enabled: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class Notification(Base):
    """The outbox: one alert for one channel, written in the transaction that found it."""

    __tablename__ = "notifications"
    __table_args__ = (
        # At most one per (rule, subject, kind) per channel, whatever replays do.
        UniqueConstraint("rule_id", "channel_id", "kind", "subject", name="uq_notifications_key"),
        Index("ix_notifications_due", "status", "next_attempt_at"),
        Index("ix_notifications_channel", "channel_id", "status"),
        Index("ix_notifications_workspace", "workspace_id", "created_at"),
        Index("ix_notifications_monitor", "monitor_id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    monitor_id: Mapped[str | None] = mapped_column(ForeignKey("monitors.id", ondelete="CASCADE"))
    rule_id: Mapped[str | None] = mapped_column(
        ForeignKey("notification_rules.id", ondelete="SET NULL")
    )
    channel_id: Mapped[str] = mapped_column(
        ForeignKey("notification_channels.id", ondelete="CASCADE")
    )
    kind: Mapped[str] = mapped_column(String(24))
    subject: Mapped[str] = mapped_column(String(200))
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    due_at: Mapped[datetime] = mapped_column(UtcDateTime())
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    next_attempt_at: Mapped[datetime] = mapped_column(UtcDateTime())
    delivered_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    last_error: Mapped[str | None] = mapped_column(Text)


class NotificationDelivery(Base):
    """The delivery log: one row per attempt at a batch (or per test sent)."""

    __tablename__ = "notification_deliveries"
    __table_args__ = (
        Index("ix_notification_deliveries_workspace", "workspace_id", "id"),
        Index("ix_notification_deliveries_channel", "channel_id", "id"),
    )

    # SQLite only auto-numbers an INTEGER primary key; PostgreSQL gets a 64-bit one.
    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    channel_id: Mapped[str] = mapped_column(
        ForeignKey("notification_channels.id", ondelete="CASCADE")
    )
    attempted_at: Mapped[datetime] = mapped_column(UtcDateTime())
    notification_ids: Mapped[list[str]] = mapped_column(JSON)
    ok: Mapped[bool] = mapped_column(Boolean)
    status_code: Mapped[int | None] = mapped_column(Integer)
    latency_ms: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    test: Mapped[bool] = mapped_column(Boolean)
