"""Shared set-up for the notification store tests: a workspace with a monitor, channels,
rules, and polls recorded the way the engine records them."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from engine import decide_niche_alerts, niche_findings
from store import (
    ChannelRecord,
    ConfirmedState,
    NewChannel,
    NewRule,
    NotificationRecord,
    NotifyKind,
    ObservedListing,
    PollOutcome,
    RuleRecord,
    Store,
)
from tests.conftest import new_monitor as new_monitor_record


async def new_monitor(store: Store, workspace_id: str | None = None) -> tuple[str, str]:
    """(monitor id, workspace id), a new workspace unless given."""
    monitor = await new_monitor_record(
        store,
        workspace_id,
        url="https://www.vinted.fr/catalog?brand_ids[]=53",
        label="Levi's jeans",
    )
    return monitor.id, monitor.workspace_id


async def new_channel(store: Store, workspace_id: str, name: str = "hook") -> ChannelRecord:
    return await store.notify.add_channel(
        NewChannel(
            workspace_id=workspace_id,
            kind="webhook",
            name=name,
            hint="https://hooks.example.com/…3f2a",
            secret_box="sealed",
        )
    )


async def new_rule(
    store: Store, workspace_id: str, kinds: tuple[NotifyKind, ...], **fields: Any
) -> RuleRecord:
    return await store.notify.add_rule(
        workspace_id, NewRule(name=fields.pop("name", "rule"), kinds=kinds, **fields)
    )


def listing(item_id: int, price: str, **fields: Any) -> ObservedListing:
    """A Levi's W32 in very good condition unless told otherwise."""
    values: dict[str, Any] = {
        "title": f"Levi's 501 #{item_id}",
        "brand": "Levi's",
        "size": "W32",
        "condition": "Very good",
        "category_id": 5,
        "category_name": "Men › Jeans",
        "currency": "EUR",
        "seller_id": 1000 + item_id,
        "seller_login": f"seller{item_id}",
        "seller_business": False,
        "url": f"https://www.vinted.fr/items/{item_id}",
    }
    return ObservedListing(item_id=item_id, price=Decimal(price), **(values | fields))


def poll(
    at: datetime,
    seen: list[ObservedListing],
    confirmed: list[ConfirmedState] | None = None,
    poll_id: str | None = None,
) -> PollOutcome:
    return PollOutcome(
        poll_id=poll_id or f"poll_{uuid.uuid4().hex}",
        started_at=at,
        finished_at=at,
        pages=1,
        seen=tuple(seen),
        confirmed=tuple(confirmed or ()),
        next_poll_at=at + timedelta(minutes=1),
    )


async def outbox(store: Store, workspace_id: str, **filters: Any) -> list[NotificationRecord]:
    """Every notification of the workspace, oldest first."""
    found, total = await store.notify.notifications(workspace_id, limit=1000, **filters)
    assert len(found) == total
    return sorted(found, key=lambda n: (n.created_at, n.kind, n.subject))


def kinds_and_subjects(notes: list[NotificationRecord]) -> set[tuple[str, str]]:
    return {(n.kind, n.subject) for n in notes}


async def add_niche_alerts(
    store: Store,
    workspace_id: str,
    monitor_id: str,
    alerts: list[Mapping[str, Any]],
    *,
    now: datetime | None = None,
) -> int:
    """Queue an analysis' alerts (`Alert.to_json()`) as the niche watch does: as findings,
    which the engine's rules give to the monitor's rules. Rows written."""
    return await store.notify.add_niche_alerts(
        workspace_id, monitor_id, niche_findings(alerts), decide=decide_niche_alerts, now=now
    )
