"""Row locks taken in the one order every writer of alerts and rules follows (PostgreSQL).

A statement that updates or deletes many rows locks them in the order its plan reads them:
the dispatcher's settle by one index, a monitor's or a rule's cascade by another. Two such
statements over the same alerts could each hold what the other waits for, and PostgreSQL
aborts one: the user saw a 503, or the dispatcher could not record a delivery it had made
and sent the batch again. So a writer first takes the rows it will change in id order,
parents before children: the channel or the monitor, then rules, then alerts
(CONTRIBUTING.md, "Lock order"; `tests/store/test_lock_order.py`).

SQLite has one writer at a time, so there is nothing to order and no statement is sent.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.orm import Session

from .models import Notification, NotificationRule


def hold_rules(db: Session, where: ColumnElement[bool]) -> None:
    """Lock the rules `where` selects, in id order, for their deletion."""
    if _ordered_locks(db):
        db.execute(
            select(NotificationRule.id).where(where).order_by(NotificationRule.id).with_for_update()
        )


def hold_alerts(db: Session, where: ColumnElement[bool], *, deleting: bool) -> None:
    """Lock the alerts `where` selects, in id order: for their deletion, or for an update
    that leaves their key alone (`deleting=False`)."""
    if _ordered_locks(db):
        query = select(Notification.id).where(where).order_by(Notification.id)
        db.execute(query.with_for_update(key_share=not deleting))


def hold_for_monitor_deletion(db: Session, monitor_id: str) -> None:
    """What a monitor's deletion cascades to, before it deletes the monitor: its own rules,
    then its alerts and those of its rules (which the rules' deletion would update)."""
    own_rules = NotificationRule.monitor_id == monitor_id
    hold_rules(db, own_rules)
    rules_alerts = Notification.rule_id.in_(select(NotificationRule.id).where(own_rules))
    hold_alerts(db, or_(Notification.monitor_id == monitor_id, rules_alerts), deleting=True)


def _ordered_locks(db: Session) -> bool:
    return db.get_bind().dialect.name == "postgresql"
