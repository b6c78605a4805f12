"""Polls as the engine records them, shared by the store and API tests."""

from __future__ import annotations

import uuid
from decimal import Decimal

from engine import decide_error_alerts
from store import MonitorRecord, ObservedListing, PollFailure, Store


def todays_listing(item_id: int) -> ObservedListing:
    """A sighting with the fields today's feeds carry (here an Italian one's), promoted."""
    return ObservedListing(
        item_id,
        price=Decimal("12.00"),
        condition="new_without_tags",
        condition_raw="Nuovo senza cartellino",
        category_name="Donna Reggiseni sportivi",
        total_price=Decimal("13.35"),
        service_fee=Decimal("1.35"),
        promoted=True,
    )


async def failed_poll(
    store: Store,
    monitor_id: str,
    error: str,
    *,
    max_consecutive: int,
    kind: str | None = None,
    poll_id: str | None = None,
) -> MonitorRecord | None:
    """Record a poll that failed just now (under a new poll id unless given), next due now."""
    return await store.monitors.record_poll_error(
        monitor_id,
        PollFailure(
            poll_id=poll_id or f"err_{uuid.uuid4().hex}",
            started_at=store.clock(),
            error=error,
            next_poll_at=store.clock(),
            max_consecutive=max_consecutive,
            kind=kind,
        ),
        decide=decide_error_alerts,
    )
