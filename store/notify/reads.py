"""Reading notifications: pages of the outbox and of the delivery log, and who owns a
workspace (the dispatcher e-mails them when a channel is disabled)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from ..accounts.models import User
from .models import Notification, NotificationDelivery
from .queries import delivery_record, notification_record
from .records import DeliveryRecord, NotificationRecord


def _page(db: Session, query: Select[Any], offset: int, limit: int) -> list[Any]:
    return list(db.scalars(query.offset(max(0, offset)).limit(max(0, limit))))


def _count(db: Session, query: Select[Any]) -> int:
    return int(db.scalar(select(func.count()).select_from(query.subquery())) or 0)


def deliveries(
    db: Session, workspace_id: str, *, channel_id: str | None, offset: int, limit: int
) -> tuple[list[DeliveryRecord], int]:
    """A page of the delivery log, newest first, and the total."""
    query = select(NotificationDelivery).where(NotificationDelivery.workspace_id == workspace_id)
    if channel_id is not None:
        query = query.where(NotificationDelivery.channel_id == channel_id)
    total = _count(db, query)
    rows = _page(db, query.order_by(NotificationDelivery.id.desc()), offset, limit)
    return [delivery_record(row) for row in rows], total


def notifications(
    db: Session,
    workspace_id: str,
    *,
    monitor_id: str | None,
    channel_id: str | None,
    status: str | None,
    offset: int,
    limit: int,
) -> tuple[list[NotificationRecord], int]:
    """A page of the outbox, newest first, and the total."""
    query = select(Notification).where(Notification.workspace_id == workspace_id)
    if monitor_id is not None:
        query = query.where(Notification.monitor_id == monitor_id)
    if channel_id is not None:
        query = query.where(Notification.channel_id == channel_id)
    if status is not None:
        query = query.where(Notification.status == status)
    total = _count(db, query)
    ordered = query.order_by(Notification.created_at.desc(), Notification.id.desc())
    return [notification_record(row) for row in _page(db, ordered, offset, limit)], total


def owner_email(db: Session, workspace_id: str) -> str | None:
    """The address of the workspace's first user (who created it)."""
    return db.scalar(
        select(User.email)
        .where(User.workspace_id == workspace_id)
        .order_by(User.created_at, User.id)
        .limit(1)
    )
