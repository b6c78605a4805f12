"""Writing alerts into the outbox, inside the transaction of what found them: a poll's new
listings and price drops (`write_poll_alerts`, called by `record_poll`, as the engine's alert
rules decide them: `_alert_decisions`), a monitor going to `error` (`write_error_alerts`), the
engine's niche alerts (`write_niche_alerts`).

One row per (rule, channel, kind, subject), inserted ON CONFLICT DO NOTHING, so replays and
concurrent writers never fail the poll's transaction and never alert twice. Alerts carry the
service's clock (`at`), which is what the dispatcher compares `due_at` with.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from ._alert_decisions import AlertCandidate, AlertRules, ListingView, NicheKey, PollAlerts
from ._monitor_models import Listing, Monitor
from ._monitor_records import FAILURE_EXPLAINED
from ._notify import effective_rule_rows, filters_from_json, rule_record
from ._notify_models import Notification, NotificationChannel, NotificationRule
from ._notify_records import EVENT_TYPES, NotifyKind, RuleRecord
from ._notify_rules import admits, due_at, matches, matches_niche, niche_subject
from ._price_book import buying_costs, many_niche_sales, site_of
from ._price_book_records import BOOK_DAYS, BOOK_SALES, Niche, NicheSales
from ._rows import new_id, to_record

QUEUED = "nichescope.alerts_queued"  # `Session.info` key: alerts written in this unit
_CHUNK = 200  # rows per INSERT: SQLite caps bound parameters per statement
MAX_NICHES = 50  # niches whose price book one poll reads, at most


class _Batch:
    """The rows one writer queues: one per channel of the rule, per alert."""

    def __init__(self, monitor: Monitor, channels: list[str], at: datetime) -> None:
        self.monitor, self.channels, self.at = monitor, channels, at
        self.rows: dict[tuple[str, str, str, str], dict[str, Any]] = {}

    def add(self, rule: NotificationRule, kind: NotifyKind, subject: str, **body: Any) -> None:
        # The rule's channels that are enabled; none listed means every enabled channel.
        wanted = set(rule.channel_ids)
        targets = [c for c in self.channels if c in wanted] if wanted else self.channels
        monitor = self.monitor
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
                "monitor": {"id": monitor.id, "label": monitor.label, "url": monitor.url},
                "rule": {"id": rule.id, "name": rule.name},
                **body,
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
            written += max(0, result.rowcount or 0)  # type: ignore[attr-defined]
        db.info[QUEUED] = db.info.get(QUEUED, 0) + written
        return written


def _targets(db: Session, monitor: Monitor) -> tuple[list[NotificationRule], list[str]]:
    """The monitor's effective rules and its workspace's enabled channels (none of either:
    nothing to write, and a poll pays two small reads for finding out)."""
    rules = effective_rule_rows(db, monitor.workspace_id, monitor.id)
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


def _view(row: Listing) -> ListingView:
    return to_record(ListingView, row)


def _books(
    db: Session, site: str, candidates: Sequence[AlertCandidate], rules: Sequence[RuleRecord],
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
    new_rows: Sequence[Listing],
    drops: Sequence[tuple[Listing, Decimal]],
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
    candidates = [] if bootstrap else [AlertCandidate(_view(row), None) for row in new_rows]
    candidates += [AlertCandidate(_view(row), old) for row, old in drops]
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
    batch, by_id = _Batch(monitor, channels, at), {row.id: row for row in rows}
    for draft in drafts:
        batch.add(by_id[draft.rule_id], draft.kind, draft.subject, **draft.body)
    return batch.write(db)


def write_error_alerts(db: Session, monitor: Monitor, *, poll_id: str, at: datetime) -> int:
    """One `monitor_error` per rule wanting it, for the poll that put the monitor in `error`."""
    rules, channels = _targets(db, monitor)
    batch = _Batch(monitor, channels, at)
    explanation = FAILURE_EXPLAINED.get(monitor.last_error_kind or "") or (
        f"Polls failed {monitor.consecutive_errors} times in a row."
    )
    for rule in rules:
        if "monitor_error" in rule.kinds:
            batch.add(
                rule,
                "monitor_error",
                f"error:{poll_id}",
                reason=f"the monitor stopped: {explanation}",
            )
    for row in batch.rows.values():  # the monitor part carries its state
        payload = json.loads(row["payload"])
        payload["monitor"] |= {
            "status": monitor.status,
            "last_error": monitor.last_error,
            "explanation": explanation,
        }
        row["payload"] = json.dumps(payload, ensure_ascii=False)
    return batch.write(db)


def _niche_of(alert: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """An alert's niche keys (top level, or inside `niche` as the analysis writes them) and
    its sales, for `min_confidence`."""
    niche = dict(alert.get("niche") or {})
    key = {name: alert.get(name, niche.get(name)) for name in _NICHE_KEYS}
    figures = alert.get("figures") or {}
    sold = niche.get("sold", figures.get("sold_recent", 0))
    return key, int(sold or 0)


_NICHE_KEYS = ("category_id", "brand", "size", "condition")


def write_niche_alerts(
    db: Session, workspace_id: str, monitor_id: str, alerts: list[dict[str, Any]], at: datetime
) -> int:
    """Queue the engine's niche alerts (an analysis `Alert.to_json()`): `kind`
    ("sell_through_jump" or "new_hot_niche"; others are skipped), `niche` (the payload's niche
    part, with `category_id`, `brand`, `size`, `condition`, which may also be given at the top
    level: the subject), `reason` (words) and `figures`. Rules' brand/size/condition filters
    apply, and `min_confidence` on the niche's `sold` (else `figures.sold_recent`). A monitor
    not in the workspace writes nothing. Returns rows written."""
    monitor = db.get(Monitor, monitor_id)
    if monitor is None or monitor.workspace_id != workspace_id:
        return 0
    rules, channels = _targets(db, monitor)
    batch = _Batch(monitor, channels, at)
    for rule in rules:
        filters = filters_from_json(rule.filters)
        for alert in alerts:
            kind = alert.get("kind")
            if kind not in ("sell_through_jump", "new_hot_niche") or kind not in rule.kinds:
                continue
            key, sold = _niche_of(alert)
            if not matches_niche(key, filters) or not admits(filters.min_confidence, sold):
                continue
            batch.add(
                rule,
                kind,
                niche_subject(*(key[name] for name in _NICHE_KEYS)),
                niche=dict(alert.get("niche") or {}),
                reason=str(alert.get("reason") or ""),
                figures=dict(alert.get("figures") or {}),
            )
    return batch.write(db)
