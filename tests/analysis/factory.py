"""Builders for analysis tests: store records and their export document, by hand."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from store import ListingEventRecord, ListingRecord

NOW = datetime(2025, 3, 31, 12, 0, tzinfo=UTC)
START = NOW - timedelta(days=30)


class History:
    """A hand-made monitor history: listings with their state events."""

    def __init__(self) -> None:
        self.listings: list[ListingRecord] = []
        self.events: list[ListingEventRecord] = []
        self._next_item = 1000
        self._next_event = 1

    def _event(self, item_id: int, kind: str, at: datetime, **kw: Any) -> None:
        self.events.append(
            ListingEventRecord(
                id=self._next_event,
                item_id=item_id,
                poll_id=f"poll-{at.isoformat()}",
                kind=kind,
                from_state=kw.get("from_state"),
                to_state=kw.get("to_state"),
                price=kw.get("price"),
                favourites=kw.get("favourites"),
                views=None,
                at=at,
                evidence=kw.get("evidence"),
            )
        )
        self._next_event += 1

    def listing(
        self,
        *,
        category: int | None = 1,
        brand: str | None = "Nike",
        size: str | None = "M",
        condition: str | None = "good",
        price: str | None = "20.00",
        favourites: int = 0,
        listed_days_ago: float | None = None,
        seen_days_ago: float = 30.0,
        sold_days_ago: float | None = None,
        deleted_days_ago: float | None = None,
        reserved_days_ago: float | None = None,
        title: str | None = None,
        sold_by: str = "detail_api",
    ) -> int:
        """One listing and its events; `sold_by="absence"` makes its sale a likely one."""
        item_id = self._next_item
        self._next_item += 1
        seen = NOW - timedelta(days=seen_days_ago)
        listed = None if listed_days_ago is None else NOW - timedelta(days=listed_days_ago)
        state, changed, evidence = "open", seen, None
        amount = None if price is None else Decimal(price)
        self._event(item_id, "new", seen, to_state="open", price=amount, favourites=favourites)
        for name, ago in (
            ("reserved", reserved_days_ago),
            ("sold", sold_days_ago),
            ("deleted", deleted_days_ago),
        ):
            if ago is not None:
                at = NOW - timedelta(days=ago)
                evidence = sold_by if name == "sold" else "detail_api"
                self._event(
                    item_id, "state", at, from_state=state, to_state=name, evidence=evidence
                )
                state, changed = name, at
        self.listings.append(
            ListingRecord(
                item_id=item_id,
                title=title or f"item {item_id}",
                brand=brand,
                size=size,
                condition=condition,
                category_id=category,
                price=amount,
                currency="EUR",
                favourites=favourites,
                views=None,
                seller_id=None,
                url=None,
                photo_url=None,
                listed_at=listed,
                first_seen_at=seen,
                last_seen_at=changed if state != "open" else NOW,
                state=state,  # type: ignore[arg-type]
                state_changed_at=changed,
                in_feed=state == "open",
                state_evidence=evidence,
                absent_polls=3 if evidence == "absence" else 0,
            )
        )
        return item_id


def _default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(type(value).__name__)


# What version 2 of the export added to version 1's listings and events.
V2_LISTING_FIELDS = (
    "condition_raw",
    "category_name",
    "total_price",
    "service_fee",
    "promoted",
    "state_evidence",
    "absent_polls",
)


def export_document(
    history: History, *, exported_at: datetime = NOW, version: int = 2
) -> dict[str, Any]:
    """The document `api/monitors/export.py` streams, built the same way (asdict + JSON);
    `version=1` drops what version 2 added (evidence, today's listing fields)."""
    listings = [asdict(r) for r in history.listings]
    events = [asdict(e) for e in history.events]
    if version == 1:
        for listing in listings:
            for key in V2_LISTING_FIELDS:
                del listing[key]
        for event in events:
            del event["evidence"]
    document = {
        "format": "nichescope.monitor-export",
        "version": version,
        "exported_at": exported_at,
        "monitor": {
            "id": "mon-1",
            "label": None,
            "url": "http://market.test/catalog",
            "status": "active",
            "interval_seconds": 600,
            "created_at": START,
        },
        "counts": {},
        "listings": listings,
        "events": events,
        "polls": [],
    }
    parsed: dict[str, Any] = json.loads(json.dumps(document, default=_default))
    return parsed
