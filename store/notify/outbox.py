"""Writing alerts into the outbox, inside the transaction of what found them: a poll's new
listings and price drops (`write_poll_alerts`, called by `record_poll`), a monitor going to
`error` (`write_error_alerts`, called by `record_poll_error`), the niche analysis' findings
(`write_niche_alerts`).

Each writer reads what the engine's alert rules need (`alert_decisions.py`), calls them, and
inserts what they return (`AlertDraft`s, `alert_payloads.py`): it decides no alert and words
none. What is added here is the delivery's: the webhook envelope around the body (event type,
id, time, monitor, rule), the channels, and when the alert is due (the rule's quiet hours or
digest). One row per (rule, channel, kind, subject), inserted ON CONFLICT DO NOTHING, so
replays and concurrent writers never fail the transaction and never alert twice. Alerts carry
the service's clock (`at`), which is what the dispatcher compares `due_at` with.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, cast

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from .._db.rows import new_id, rows_changed
from ..market.price_book import buying_costs, many_niche_sales, site_of
from ..market.price_book_records import BOOK_DAYS, BOOK_SALES, Niche, NicheSales
from ..monitors.models import Monitor
from ..monitors.records import MonitorStatus
from .alert_decisions import (
    AlertCandidate,
    AlertRules,
    ErrorAlertRules,
    ErrorAlerts,
    ListingView,
    NicheAlertRules,
    NicheAlerts,
    NicheFinding,
    NicheKey,
    PollAlerts,
)
from .alert_payloads import AlertDraft, MonitorErrorAlert
from .models import Notification, NotificationChannel, NotificationRule
from .queries import effective_rule_rows, rule_record
from .records import EVENT_TYPES, RuleRecord
from .rules import due_at, matches

QUEUED = "nichescope.alerts_queued"  # `Session.info` key: alerts written in this unit
_CHUNK = 200  # rows per INSERT: SQLite caps bound parameters per statement
MAX_NICHES = 50  # niches whose price book one poll reads, at most


class _Batch:
    """The rows one writer queues: one per channel of the rule, per alert."""

    def __init__(self, monitor: Monitor, channels: list[str], at: datetime) -> None:
        self.monitor, self.channels, self.at = monitor, channels, at
        self.rows: dict[tuple[str, str, str, str], dict[str, Any]] = {}

    def add(self, rule: NotificationRule, draft: AlertDraft) -> None:
        # The rule's channels that are enabled; none listed means every enabled channel.
        wanted = set(rule.channel_ids)
        targets = [c for c in self.channels if c in wanted] if wanted else self.channels
        monitor, kind, subject, body = self.monitor, draft.kind, draft.subject, draft.body
        about = {"id": monitor.id, "label": monitor.label, "url": monitor.url}
        if isinstance(body, MonitorErrorAlert):  # its state goes out inside `monitor`
            about |= body.monitor_state()
        when = due_at(
            self.at,
            mode=rule.mode,
            digest_hour=rule.digest_hour,
            quiet_start=rule.quiet_start,
            quiet_end=rule.quiet_end,
            timezone=rule.timezone,
        )
        for channel_id in targets:
            notification_id = new_id("ntf")
            payload = {
                "type": EVENT_TYPES[kind],
                "version": 1,
                "id": notification_id,
                "created_at": self.at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "monitor": about,
                "rule": {"id": rule.id, "name": rule.name},
                **body.to_json(),
            }
            self.rows.setdefault(
                (rule.id, channel_id, kind, subject),
                {
                    "id": notification_id,
                    "workspace_id": monitor.workspace_id,
                    "monitor_id": monitor.id,
                    "rule_id": rule.id,
                    "channel_id": channel_id,
                    "kind": kind,
                    "subject": subject,
                    "payload": json.dumps(payload, ensure_ascii=False),
                    "created_at": self.at,
                    "due_at": when,
                    "status": "pending",
                    "attempts": 0,
                    "next_attempt_at": self.at,
                },
            )

    def write(self, db: Session) -> int:
        """Insert the rows, skipping any whose key is already there; the number written."""
        rows = list(self.rows.values())
        insert = postgresql.insert if db.get_bind().dialect.name == "postgresql" else sqlite.insert
        written = 0
        for start in range(0, len(rows), _CHUNK):
            chunk = insert(Notification).values(rows[start : start + _CHUNK])
            # psycopg reports an INSERT's row count only when asked to keep it.
            result = db.execute(
                chunk.on_conflict_do_nothing().execution_options(preserve_rowcount=True)
            )
            written += rows_changed(result)
        db.info[QUEUED] = db.info.get(QUEUED, 0) + written
        return written


def _targets(db: Session, monitor: Monitor) -> tuple[list[NotificationRule], list[str]]:
    """The monitor's effective rules and its workspace's enabled channels (none of either:
    nothing to write, and a poll pays two small reads for finding out).

    Both held until the transaction ends (PostgreSQL's `FOR KEY SHARE`, which the alerts'
    foreign keys would take at their insert anyway, and which edits do not wait for): a rule
    or channel deleted between this read and that insert failed the insert, and with it
    the poll."""
    rules = effective_rule_rows(db, monitor.workspace_id, monitor.id, hold=True)
    if not rules:
        return [], []
    channels = list(
        db.scalars(
            select(NotificationChannel.id)
            .where(
                NotificationChannel.workspace_id == monitor.workspace_id,
                NotificationChannel.enabled.is_(True),
                # Not even queued for a recipient who never agreed: confirming later must not
                # release a backlog onto them.
                NotificationChannel.confirmed_at.is_not(None),
            )
            .order_by(NotificationChannel.created_at, NotificationChannel.id)
            .with_for_update(read=True, key_share=True)
        )
    )
    return rules, channels


def _already_queued(
    db: Session, rules: Sequence[NotificationRule], subjects: list[str]
) -> set[tuple[str, str, str]]:
    """(rule, kind, subject) already in the outbox among `subjects`: a listing that monitors
    sharing a workspace rule all see is alerted by the first, and the others skip its niche
    figures, the costly part, instead of computing them for an insert that would do nothing."""
    found: set[tuple[str, str, str]] = set()
    rule_ids = [rule.id for rule in rules]
    for start in range(0, len(subjects), _CHUNK):
        rows = db.execute(
            select(Notification.rule_id, Notification.kind, Notification.subject).where(
                Notification.rule_id.in_(rule_ids),
                Notification.subject.in_(subjects[start : start + _CHUNK]),
            )
        )
        found.update((str(r), str(k), str(s)) for r, k, s in rows)
    return found


def _books(
    db: Session,
    site: str,
    candidates: Sequence[AlertCandidate],
    rules: Sequence[RuleRecord],
    at: datetime,
) -> dict[NicheKey, NicheSales]:
    """The price book of the niches of the candidates some rule's filters pass (a listing no
    rule wants costs no read), at most `MAX_NICHES` niches: a listing of a niche past the cap
    gets no figures (no deal, and skipped by a rule that asks for confidence)."""
    niches: dict[NicheKey, Niche] = {}
    for candidate in candidates:
        key = candidate.niche.key
        if key in niches or len(niches) >= MAX_NICHES:
            continue
        if any(matches(candidate.listing, rule.filters) for rule in rules):
            niches[key] = candidate.niche
    since = at - timedelta(days=BOOK_DAYS)
    return many_niche_sales(db, site, list(niches.values()), since=since, limit=BOOK_SALES)


def write_poll_alerts(
    db: Session,
    monitor: Monitor,
    *,
    new: Sequence[ListingView],
    drops: Sequence[tuple[ListingView, Decimal]],
    bootstrap: bool,
    at: datetime,
    decide: AlertRules | None,
) -> int:
    """Queue the alerts of one poll as `decide` (the engine's alert rules) decides them:
    `new_listing` and `deal` for listings first seen (none on the bootstrap poll, where
    everything is new), `price_drop` and `deal` for price drops (`drops`: the row, already at
    its new price, and the old price). This reads what the rules need (the monitor's rules,
    the site's price book of the listings' niches, the workspace's buying costs) and inserts
    what they return. Returns rows written; `decide` None writes nothing. A database error
    propagates and fails the poll's transaction with it."""
    candidates = [] if bootstrap else [AlertCandidate(listing, None) for listing in new]
    candidates += [AlertCandidate(listing, old) for listing, old in drops]
    if not candidates or decide is None:
        return 0
    rows, channels = _targets(db, monitor)
    if not rows or not channels:
        return 0
    rules = tuple(rule_record(row) for row in rows)
    site = site_of(monitor.url)
    drafts = decide(
        PollAlerts(
            site=site, at=at, rules=rules, candidates=tuple(candidates),
            books=_books(db, site, candidates, rules, at),
            costs=buying_costs(db, monitor.workspace_id),
            queued=frozenset(_already_queued(db, rows, [c.subject for c in candidates])),
        )
    )  # fmt: skip
    return _queue(db, monitor, rows, channels, at, drafts)


def _queue(
    db: Session,
    monitor: Monitor,
    rules: Sequence[NotificationRule],
    channels: list[str],
    at: datetime,
    drafts: Sequence[AlertDraft],
) -> int:
    """Insert the drafts the engine's rules returned, each on its rule's channels; rows
    written."""
    batch, by_id = _Batch(monitor, channels, at), {rule.id: rule for rule in rules}
    for draft in drafts:
        batch.add(by_id[draft.rule_id], draft)
    return batch.write(db)


def write_error_alerts(
    db: Session, monitor: Monitor, *, poll_id: str, at: datetime, decide: ErrorAlertRules
) -> int:
    """Queue the `monitor_error` alerts `decide` (the engine's rules) draws from `monitor`,
    which poll `poll_id` has just put in `error`. Returns rows written."""
    rows, channels = _targets(db, monitor)
    if not rows or not channels:
        return 0
    drafts = decide(
        ErrorAlerts(
            poll_id=poll_id,
            status=cast(MonitorStatus, monitor.status),
            last_error=monitor.last_error,
            last_error_kind=monitor.last_error_kind,
            consecutive_errors=monitor.consecutive_errors,
            rules=tuple(rule_record(row) for row in rows),
        )
    )
    return _queue(db, monitor, rows, channels, at, drafts)


def write_niche_alerts(
    db: Session,
    workspace_id: str,
    monitor_id: str,
    findings: Sequence[NicheFinding],
    at: datetime,
    decide: NicheAlertRules,
) -> int:
    """Queue the niche alerts `decide` (the engine's rules) draws from the analysis'
    `findings` for the monitor's rules. A monitor not in the workspace writes nothing.
    Returns rows written."""
    monitor = db.get(Monitor, monitor_id)
    if monitor is None or monitor.workspace_id != workspace_id or not findings:
        return 0
    rows, channels = _targets(db, monitor)
    if not rows or not channels:
        return 0
    rules = tuple(rule_record(row) for row in rows)
    drafts = decide(NicheAlerts(rules=rules, findings=tuple(findings)))
    return _queue(db, monitor, rows, channels, at, drafts)
