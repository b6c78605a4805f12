"""The dispatcher's side of the outbox: claiming channels with due notifications, recording
what a delivery attempt did, and when anything is next due.

Cluster safety: a channel is sent by one node at a time. `claim_due` marks each channel it
returns with the node and a deadline (`claimed_by`, `claim_until`) in the transaction that
found it; a claim is taken only by a conditional UPDATE that sees the channel unclaimed or
its claim lapsed. On PostgreSQL the candidates are read `FOR NO KEY UPDATE SKIP LOCKED`, so
two nodes claiming at once split the channels instead of queueing behind each other (the
"no key" lock does not conflict with the key-share locks a poll's outbox inserts take on
the channel rows, so polls never wait for a claim); on SQLite the transaction starts with a
write, which serialises claimers (one writer at a time).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Select, and_, case, func, or_, select, update
from sqlalchemy.orm import Session

from .._db.base import UtcDateTime
from .._db.rows import rows_changed
from .holds import hold_alerts
from .models import Notification, NotificationChannel, NotificationDelivery
from .queries import channel_record, notification_record
from .records import ChannelBatch, ChannelRecord, DeliveryOutcome

_C, _N = NotificationChannel, Notification


def _free(now: datetime) -> ColumnElement[bool]:
    return or_(_C.claimed_by.is_(None), _C.claim_until.is_(None), _C.claim_until <= now)


def _due(now: datetime) -> ColumnElement[bool]:
    return and_(_N.status == "pending", _N.due_at <= now, _N.next_attempt_at <= now)


def claim_due(
    db: Session,
    node_id: str,
    *,
    now: datetime,
    channels: int,
    batch: int,
    claim_seconds: float,
) -> list[ChannelBatch]:
    """Claim up to `channels` enabled, unclaimed (or lapsed), unpaced channels that have
    due notifications, each with its `batch` oldest due ones. A channel another node claims
    meanwhile is skipped, never returned twice."""
    postgres = db.get_bind().dialect.name == "postgresql"
    if not postgres:
        # Take SQLite's write lock first, so the read below cannot be overtaken by another
        # claimer's write (and lapsed claims are tidied while at it).
        db.execute(
            update(_C).where(_C.claim_until <= now).values(claimed_by=None, claim_until=None)
        )
    oldest = (
        select(func.min(_N.due_at))
        .where(_N.channel_id == _C.id, _due(now))
        .correlate(_C)
        .scalar_subquery()
    )
    query = (
        select(_C)
        .where(
            _C.enabled.is_(True),
            _C.confirmed_at.is_not(None),  # a recipient who never agreed gets nothing
            _free(now),
            or_(_C.next_send_at.is_(None), _C.next_send_at <= now),
            oldest.is_not(None),
        )
        .order_by(oldest, _C.id)
        .limit(channels)
    )
    if postgres:
        query = query.with_for_update(skip_locked=True, of=_C, key_share=True)
    until = now + timedelta(seconds=claim_seconds)
    claimed: list[ChannelBatch] = []
    for row in list(db.scalars(query)):
        taken = db.execute(
            update(_C)
            .where(_C.id == row.id, _free(now))
            .values(claimed_by=node_id, claim_until=until)
            .execution_options(synchronize_session=False)
        )
        if not taken.rowcount:  # type: ignore[attr-defined]
            continue
        due = db.scalars(
            select(_N)
            .where(_N.channel_id == row.id, _due(now))
            .order_by(_N.created_at, _N.id)
            .limit(batch)
        )
        notes = tuple(notification_record(n) for n in due)
        if notes:
            claimed.append(ChannelBatch(channel=channel_record(row), notifications=notes))
    return claimed


def release(db: Session, channel_id: str, node_id: str) -> None:
    """Give the claim back, if it is still this node's."""
    db.execute(
        update(_C)
        .where(_C.id == channel_id, _C.claimed_by == node_id)
        .values(claimed_by=None, claim_until=None)
    )


def release_all(db: Session, node_id: str) -> int:
    """Give back every claim `node_id` holds: a node starting again under the same id was
    cut short and sends nothing under its old claims. The number released."""
    result = db.execute(
        update(_C).where(_C.claimed_by == node_id).values(claimed_by=None, claim_until=None)
    )
    return rows_changed(result)


def record_outcome(
    db: Session,
    outcome: DeliveryOutcome,
    *,
    node_id: str,
    now: datetime,
    keep_claim: bool = False,
) -> ChannelRecord | None:
    """Log one attempt at a batch and apply it: notifications delivered; or failed for good
    (`permanent`); or retried at `retry_at` (now if None). The channel's health follows; a
    channel failing for `disable_after` or longer is disabled with the reason in words; its
    pending notifications are kept (claimed again once the channel is enabled).

    Returns the channel only when this outcome disabled it (so the caller e-mails the owner
    once); None otherwise, or when the channel is gone (nothing is logged then). The claim is
    released only if this node still holds it, and not with `keep_claim`."""
    channel = db.scalar(_held_channel(outcome.channel_id))
    if channel is None:
        return None
    _log_attempt(db, channel, outcome, now, test=False)
    _settle_batch(db, channel.id, list(outcome.notification_ids), outcome, now)
    if outcome.next_send_at is not None:
        channel.next_send_at = outcome.next_send_at
    if channel.claimed_by == node_id and not keep_claim:
        channel.claimed_by, channel.claim_until = None, None
    if not _follow_health(channel, outcome, now):
        return None
    db.flush()
    return channel_record(channel)


def _held_channel(channel_id: str) -> Select[NotificationChannel]:
    """The channel, locked against deletion and other writers (not against the key-share
    locks a poll's alerts take on it). SQLite ignores the lock: it has one writer."""
    query = select(_C).where(_C.id == channel_id).with_for_update(key_share=True)
    return query.execution_options(populate_existing=True)


def _settle_batch(
    db: Session, channel_id: str, ids: list[str], outcome: DeliveryOutcome, now: datetime
) -> None:
    """One attempt more for each of the batch's still pending notifications, and their fate:
    delivered; failed for good (`permanent`); or due again at `retry_at` (now if None)."""
    mine = and_(_N.channel_id == channel_id, _N.id.in_(ids), _N.status == "pending")
    if outcome.ok:
        values: dict[str, object] = {"status": "delivered", "delivered_at": now, "last_error": None}
    elif outcome.permanent:
        values = {"status": "failed", "last_error": outcome.error}
    else:
        values = {"next_attempt_at": outcome.retry_at or now, "last_error": outcome.error}
    if ids:
        hold_alerts(db, mine, deleting=False)  # in id order (`holds`)
        db.execute(
            update(_N)
            .where(mine)
            .values(attempts=_N.attempts + 1, **values)
            .execution_options(synchronize_session=False)
        )


def _log_attempt(
    db: Session,
    channel: NotificationChannel,
    outcome: DeliveryOutcome,
    now: datetime,
    *,
    test: bool,
) -> None:
    """The delivery log's row of one attempt: at a batch, or a test the API sent."""
    db.add(
        NotificationDelivery(
            workspace_id=channel.workspace_id,
            channel_id=channel.id,
            attempted_at=now,
            notification_ids=list(outcome.notification_ids),
            ok=outcome.ok,
            status_code=outcome.status_code,
            latency_ms=outcome.latency_ms,
            error=outcome.error,
            test=test,
        )
    )


def _note_health(
    channel: NotificationChannel, outcome: DeliveryOutcome, now: datetime
) -> datetime | None:
    """The channel's health after an attempt (a test counts like any delivery): healthy
    again on success, else failing since the first failure of the streak; returns when
    that streak began (None: healthy)."""
    if outcome.ok:
        channel.last_success_at, channel.failing_since, channel.last_error = now, None, None
    else:
        channel.last_failure_at, channel.last_error = now, outcome.error
        channel.failing_since = channel.failing_since or now
    return channel.failing_since


def _follow_health(channel: NotificationChannel, outcome: DeliveryOutcome, now: datetime) -> bool:
    """The channel's health after the attempt; True when this outcome disabled it (failing
    for `disable_after` or longer: disabled, with the reason in words)."""
    failing_since = _note_health(channel, outcome, now)
    if failing_since is None or not channel.enabled or now - failing_since < outcome.disable_after:
        return False
    hours = outcome.disable_after.total_seconds() / 3600
    channel.enabled = False
    channel.disabled_reason = (
        f"Disabled after failing for {hours:g} hours in a row; "
        f"the last error: {outcome.error or 'unknown'}."
    )
    return True


def next_due_at(db: Session) -> datetime | None:
    """The earliest moment anything pending could be sent: per enabled channel, its oldest
    notification's later of due and retry times, held back by the channel's pacing and by
    another node's live claim."""
    ready = case((_N.due_at > _N.next_attempt_at, _N.due_at), else_=_N.next_attempt_at)
    rows = db.execute(
        select(
            func.min(ready, type_=UtcDateTime()),
            func.max(_C.next_send_at, type_=UtcDateTime()),
            func.max(_C.claim_until, type_=UtcDateTime()),
        )
        .join(_C, _C.id == _N.channel_id)
        .where(_N.status == "pending", _C.enabled.is_(True), _C.confirmed_at.is_not(None))
        .group_by(_N.channel_id)
    )
    moments = [max(m for m in (when, paced, claim) if m is not None) for when, paced, claim in rows]
    return min(moments, default=None)


def log_test(db: Session, workspace_id: str, outcome: DeliveryOutcome, now: datetime) -> bool:
    """Log a test the API sent; False (nothing logged) if the channel is not the
    workspace's. A test is evidence of the destination's health like any delivery: one that
    arrived makes the channel healthy, one that failed makes it failing (a test never
    disables a channel: only real deliveries failing for long do).

    The channel is locked as `record_outcome` locks it: a deletion meanwhile waits for the
    log's row (which names the channel) instead of removing the channel under it."""
    channel = db.scalar(_held_channel(outcome.channel_id))
    if channel is None or channel.workspace_id != workspace_id:
        return False
    _note_health(channel, outcome, now)
    _log_attempt(db, channel, outcome, now, test=True)
    db.flush()
    return True
