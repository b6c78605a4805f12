"""Records of the monitor domain, in and out of the store."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Literal

ListingState = Literal["open", "reserved", "sold", "deleted"]
LISTING_STATES: tuple[ListingState, ...] = ("open", "reserved", "sold", "deleted")
MonitorStatus = Literal["paused", "active", "error"]


@dataclass(frozen=True, slots=True)
class MonitorRecord:
    id: str
    workspace_id: str
    label: str | None
    url: str
    source_analysis_id: str | None
    status: MonitorStatus
    interval_seconds: int
    page_cap: int
    created_at: datetime
    bootstrapped_at: datetime | None
    last_poll_at: datetime | None
    next_poll_at: datetime | None
    consecutive_errors: int
    total_errors: int
    last_error: str | None
    polls: int


@dataclass(frozen=True, slots=True)
class ObservedListing:
    """A listing as one poll saw it in the feed."""

    item_id: int
    title: str | None = None
    brand: str | None = None
    size: str | None = None
    condition: str | None = None
    category_id: int | None = None
    price: Decimal | None = None
    currency: str | None = None
    favourites: int | None = None
    views: int | None = None
    seller_id: int | None = None
    url: str | None = None
    photo_url: str | None = None
    listed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ConfirmedState:
    """The state of a listing that left the feed, as the item detail confirmed it."""

    item_id: int
    state: ListingState


@dataclass(frozen=True, slots=True)
class PollOutcome:
    """Everything one successful poll learnt; written in one transaction."""

    poll_id: str
    started_at: datetime
    finished_at: datetime
    pages: int
    seen: tuple[ObservedListing, ...]
    confirmed: tuple[ConfirmedState, ...]
    next_poll_at: datetime


@dataclass(frozen=True, slots=True)
class PollRecord:
    id: str
    monitor_id: str
    started_at: datetime
    finished_at: datetime
    pages: int
    items: int
    new: int
    changed: int
    confirmed: int
    duration_ms: int
    error: str | None


@dataclass(frozen=True, slots=True)
class ListingRecord:
    item_id: int
    title: str | None
    brand: str | None
    size: str | None
    condition: str | None
    category_id: int | None
    price: Decimal | None
    currency: str | None
    favourites: int | None
    views: int | None
    seller_id: int | None
    url: str | None
    photo_url: str | None
    listed_at: datetime | None
    first_seen_at: datetime
    last_seen_at: datetime
    state: ListingState
    state_changed_at: datetime
    in_feed: bool


@dataclass(frozen=True, slots=True)
class ListingEventRecord:
    id: int
    item_id: int
    poll_id: str
    kind: str
    from_state: str | None
    to_state: str | None
    price: Decimal | None
    favourites: int | None
    views: int | None
    at: datetime


@dataclass(frozen=True, slots=True)
class ListingPage:
    listings: list[ListingRecord]
    total: int
