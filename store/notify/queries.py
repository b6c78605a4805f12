"""Notification repository functions: channels and rules, and the rows-to-records copiers.
Each takes the unit of work's session (see `facade.py`). Elsewhere: the dispatcher's
claims and outcomes in `claims.py`, alerts written by polls in `outbox.py`,
pages of the outbox and the log in `reads.py`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, fields, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, cast

from sqlalchemy import and_, delete, func, select
from sqlalchemy.orm import Session

from .._db.errors import NotFoundInWorkspace
from .._db.rows import new_id, owned_row, record_fields, to_record
from ..accounts.quotas import hold_workspace, refuse_past
from ..monitors.models import Monitor
from .holds import hold_alerts, hold_rules
from .models import (
    Notification,
    NotificationChannel,
    NotificationDelivery,
    NotificationRule,
)
from .records import (
    ChannelRecord,
    DeliveryRecord,
    NewChannel,
    NewRule,
    NotificationRecord,
    NotifyKind,
    RuleFilters,
    RuleRecord,
)

# -- rows to records ---------------------------------------------------------------------------


def channel_record(row: NotificationChannel) -> ChannelRecord:
    return to_record(ChannelRecord, row)


def _json_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)  # exact, unlike a float
    return list(value) if isinstance(value, tuple) else value


def filters_to_json(filters: RuleFilters) -> dict[str, Any]:
    return {name: _json_value(value) for name, value in asdict(filters).items()}


def filters_from_json(data: dict[str, Any]) -> RuleFilters:
    """Filters as stored; unknown keys (from a later version) are ignored."""
    values: dict[str, Any] = {}
    for f in fields(RuleFilters):
        if f.name not in data or data[f.name] is None:
            continue
        value = data[f.name]
        if f.name in ("price_min", "price_max"):
            values[f.name] = Decimal(str(value))
        elif isinstance(value, list):
            values[f.name] = tuple(str(v) for v in value)
        else:
            values[f.name] = value
    return RuleFilters(**values)


def rule_record(row: NotificationRule) -> RuleRecord:
    return to_record(
        RuleRecord,
        row,
        kinds=tuple(cast(list[NotifyKind], row.kinds)),
        filters=filters_from_json(row.filters),
        channel_ids=tuple(row.channel_ids),
    )


def notification_record(row: Notification) -> NotificationRecord:
    return to_record(NotificationRecord, row, payload=json.loads(row.payload))


def delivery_record(row: NotificationDelivery) -> DeliveryRecord:
    return to_record(DeliveryRecord, row, notification_ids=tuple(row.notification_ids))


# -- channels ----------------------------------------------------------------------------------


def add_channel(
    db: Session, new: NewChannel, now: datetime, *, at_most: int | None = None
) -> ChannelRecord:
    """A new channel; with `at_most`, `QuotaFull` (nothing written) when the workspace has
    that many already, counted under its quota lock (`store/accounts/quotas.py`)."""
    if at_most is not None:
        hold_workspace(db, new.workspace_id)
        count = select(func.count()).where(NotificationChannel.workspace_id == new.workspace_id)
        refuse_past("channels", at_most, int(db.scalar(count) or 0))
    columns = record_fields(new)
    confirmed_at = None if columns.pop("awaiting_confirmation") else now
    row = NotificationChannel(
        id=new_id("chn"), enabled=True, created_at=now, confirmed_at=confirmed_at, **columns
    )
    db.add(row)
    db.flush()
    return channel_record(row)


def list_channels(db: Session, workspace_id: str) -> list[ChannelRecord]:
    rows = db.scalars(
        select(NotificationChannel)
        .where(NotificationChannel.workspace_id == workspace_id)
        .order_by(NotificationChannel.created_at, NotificationChannel.id)
    )
    return [channel_record(row) for row in rows]


def get_channel(db: Session, workspace_id: str, channel_id: str) -> ChannelRecord | None:
    row = owned_row(db, NotificationChannel, channel_id, workspace_id)
    return channel_record(row) if row is not None else None


def update_channel(
    db: Session,
    workspace_id: str,
    channel_id: str,
    *,
    name: str | None,
    enabled: bool | None,
    secret_box: str | None,
    hint: str | None,
) -> ChannelRecord | None:
    """Change what is given (None: unchanged); enabling clears the disabled reason and the
    failing streak, so the channel starts afresh. None if not in the workspace."""
    row = owned_row(db, NotificationChannel, channel_id, workspace_id)
    if row is None:
        return None
    if name is not None:
        row.name = name
    if secret_box is not None:
        row.secret_box = secret_box
    if hint is not None:
        row.hint = hint
    if enabled is not None:
        if enabled and not row.enabled:
            row.disabled_reason, row.failing_since = None, None
        row.enabled = enabled
    db.flush()
    return channel_record(row)


def delete_channel(db: Session, workspace_id: str, channel_id: str) -> bool:
    """Delete the channel, its outbox rows and its log, and take its id out of every rule.
    A rule left with no channel is disabled rather than widened: an empty list means "every
    channel", which the user never chose for it.

    Rows are taken parents first (PostgreSQL), as every other writer takes them: the channel
    (the dispatcher locks it before settling its batch), then the workspace's rules in id
    order (a rule's deletion locks it before its alerts), then the alerts and the log.
    Children first, a delete and either of those held what the other waited for, and
    PostgreSQL aborted one of them (`tests/store/test_lock_order.py`)."""
    row = owned_row(db, NotificationChannel, channel_id, workspace_id, lock=True)
    if row is None:
        return False
    rules = db.scalars(
        select(NotificationRule)
        .where(NotificationRule.workspace_id == workspace_id)
        .order_by(NotificationRule.id)
        .with_for_update(key_share=True)
    )
    for rule in rules:
        if channel_id in rule.channel_ids:
            rule.channel_ids = [c for c in rule.channel_ids if c != channel_id]
            if not rule.channel_ids:
                rule.enabled = False
    db.flush()
    hold_alerts(db, Notification.channel_id == channel_id, deleting=True)
    for table in (Notification, NotificationDelivery):  # not relying on SQLite's cascades
        db.execute(delete(table).where(table.channel_id == channel_id))
    db.delete(row)
    db.flush()
    return True


def channel_secret(db: Session, channel_id: str) -> str | None:
    return db.scalar(
        select(NotificationChannel.secret_box).where(NotificationChannel.id == channel_id)
    )


# -- rules -------------------------------------------------------------------------------------


def _check_owned(db: Session, workspace_id: str, rule: NewRule) -> None:
    """`NotFoundInWorkspace` unless the rule's monitor and channels are the workspace's."""
    if rule.monitor_id is not None:
        owner = db.scalar(select(Monitor.workspace_id).where(Monitor.id == rule.monitor_id))
        if owner != workspace_id:
            raise NotFoundInWorkspace("monitor", rule.monitor_id)
    if rule.channel_ids:
        owned = set(
            db.scalars(
                select(NotificationChannel.id).where(
                    NotificationChannel.workspace_id == workspace_id,
                    NotificationChannel.id.in_(rule.channel_ids),
                )
            )
        )
        for channel_id in rule.channel_ids:
            if channel_id not in owned:
                raise NotFoundInWorkspace("channel", channel_id)


def _rule_values(rule: NewRule) -> dict[str, Any]:
    """The rule's columns: its fields, with the lists deduplicated and the filters as JSON."""
    return record_fields(rule) | {
        "kinds": list(dict.fromkeys(rule.kinds)),
        "filters": filters_to_json(rule.filters),
        "channel_ids": list(dict.fromkeys(rule.channel_ids)),
    }


def _new_rule_row(workspace_id: str, rule: NewRule, at: datetime) -> NotificationRule:
    """A new rule's row, created (and so last updated) `at`."""
    return NotificationRule(
        id=new_id("rul"),
        workspace_id=workspace_id,
        created_at=at,
        updated_at=at,
        **_rule_values(rule),
    )


def _admit_rules(
    db: Session, workspace_id: str, at_most: int | None, adding: int, monitor_id: str | None
) -> None:
    """`QuotaFull` when `adding` rules to the workspace's, less `monitor_id`'s own (which are
    being replaced), would pass `at_most`; counted under the quota lock, first in the unit."""
    if at_most is None:
        return
    hold_workspace(db, workspace_id)
    count = select(func.count()).where(NotificationRule.workspace_id == workspace_id)
    if monitor_id is not None:
        count = count.where(NotificationRule.monitor_id.is_distinct_from(monitor_id))
    refuse_past("rules", at_most, int(db.scalar(count) or 0), adding)


def add_rule(
    db: Session, workspace_id: str, rule: NewRule, now: datetime, *, at_most: int | None = None
) -> RuleRecord:
    """Create a rule; `NotFoundInWorkspace` if its monitor or a channel is not the
    workspace's, `QuotaFull` past `at_most` rules (nothing written either way)."""
    _admit_rules(db, workspace_id, at_most, 1, None)
    _check_owned(db, workspace_id, rule)
    row = _new_rule_row(workspace_id, rule, now)
    db.add(row)
    db.flush()
    return rule_record(row)


def list_rules(
    db: Session, workspace_id: str, *, monitor_id: str | None, defaults_only: bool
) -> list[RuleRecord]:
    query = select(NotificationRule).where(NotificationRule.workspace_id == workspace_id)
    if monitor_id is not None:
        query = query.where(NotificationRule.monitor_id == monitor_id)
    elif defaults_only:
        query = query.where(NotificationRule.monitor_id.is_(None))
    rows = db.scalars(query.order_by(NotificationRule.created_at, NotificationRule.id))
    return [rule_record(row) for row in rows]


def get_rule(db: Session, workspace_id: str, rule_id: str) -> RuleRecord | None:
    row = owned_row(db, NotificationRule, rule_id, workspace_id)
    return rule_record(row) if row is not None else None


def replace_rule(
    db: Session, workspace_id: str, rule_id: str, rule: NewRule, now: datetime
) -> RuleRecord | None:
    """Replace every field of the rule (its id and created_at stay); None if not in the
    workspace; `NotFoundInWorkspace` as `add_rule`."""
    row = owned_row(db, NotificationRule, rule_id, workspace_id)
    if row is None:
        return None
    _check_owned(db, workspace_id, rule)
    for name, value in _rule_values(rule).items():
        setattr(row, name, value)
    row.updated_at = now
    db.flush()
    return rule_record(row)


def delete_rule(db: Session, workspace_id: str, rule_id: str) -> bool:
    """Delete the rule; its alerts already in the outbox still go (they keep no rule).
    The rule is locked before its alerts, which its foreign key's SET NULL updates (`holds`)."""
    row = owned_row(db, NotificationRule, rule_id, workspace_id, lock=True)
    if row is None:
        return False
    hold_alerts(db, Notification.rule_id == rule_id, deleting=False)
    db.delete(row)
    db.flush()
    return True


def set_monitor_rules(
    db: Session,
    workspace_id: str,
    monitor_id: str,
    rules: Sequence[NewRule],
    now: datetime,
    *,
    at_most: int | None = None,
) -> list[RuleRecord]:
    """Replace the monitor's own rules with `rules` (their `monitor_id` is set to this
    monitor); `NotFoundInWorkspace` if the monitor or a channel is not the workspace's,
    `QuotaFull` if the workspace's other rules and these would pass `at_most`."""
    _admit_rules(db, workspace_id, at_most, len(rules), monitor_id)
    # The monitor locked before its rules go (PostgreSQL): a poll of it locks it first too,
    # then holds the rules its alerts name (`outbox._targets`), so the two queue.
    owner = db.scalar(
        select(Monitor.workspace_id).where(Monitor.id == monitor_id).with_for_update(key_share=True)
    )
    if owner != workspace_id:
        raise NotFoundInWorkspace("monitor", monitor_id)
    own_rules = and_(
        NotificationRule.workspace_id == workspace_id, NotificationRule.monitor_id == monitor_id
    )
    hold_rules(db, own_rules)  # then their alerts, which lose them (`holds`)
    hold_alerts(
        db, Notification.rule_id.in_(select(NotificationRule.id).where(own_rules)), deleting=False
    )
    db.execute(delete(NotificationRule).where(own_rules))
    made = []
    for position, rule in enumerate(rules):
        own = replace(rule, monitor_id=monitor_id)
        _check_owned(db, workspace_id, own)
        # A microsecond apart, so that listing them (by creation) keeps the order given.
        row = _new_rule_row(workspace_id, own, now + timedelta(microseconds=position))
        db.add(row)
        made.append(row)
    db.flush()
    return [rule_record(row) for row in made]


def effective_rule_rows(
    db: Session, workspace_id: str, monitor_id: str, *, hold: bool = False
) -> list[NotificationRule]:
    """The monitor's own enabled rules if it has any, else the workspace's enabled
    defaults: one query. `hold`: for a writer that goes on to name them (PostgreSQL's
    `FOR KEY SHARE`): a rule deleted meanwhile either waits for this transaction or was
    gone before this read."""
    query = (
        select(NotificationRule)
        .where(
            NotificationRule.workspace_id == workspace_id,
            NotificationRule.enabled.is_(True),
            (NotificationRule.monitor_id == monitor_id) | NotificationRule.monitor_id.is_(None),
        )
        .order_by(NotificationRule.created_at, NotificationRule.id)
    )
    if hold:
        query = query.with_for_update(read=True, key_share=True)
    rows = list(db.scalars(query))
    own = [row for row in rows if row.monitor_id == monitor_id]
    return own or rows


def effective_rules(db: Session, workspace_id: str, monitor_id: str) -> list[RuleRecord]:
    return [rule_record(row) for row in effective_rule_rows(db, workspace_id, monitor_id)]
