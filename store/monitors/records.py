"""Records of the monitor domain, in and out of the store."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Literal

from .._db.rows import new_id

ListingState = Literal["open", "reserved", "sold", "deleted"]
LISTING_STATES: tuple[ListingState, ...] = ("open", "reserved", "sold", "deleted")
MonitorStatus = Literal["paused", "active", "error"]
# How a state change was established: the item detail API, the public item page (JSON-LD), or
# absence from the feed for several polls in a row with no source able to confirm it (a
# *likely* change, never a confirmed one: a listing sold by absence is a likely sale).
Evidence = Literal["detail_api", "item_page", "absence"]
EVIDENCE_KINDS: tuple[Evidence, ...] = ("detail_api", "item_page", "absence")
# Why a poll that reached the marketplace was still refused as data (see MARKETPLACE.md,
# "A block can look like success"); a poll error with no kind is an ordinary failure.
PollFailureKind = Literal[
    "suspected_block", "filters_ignored", "profile_moved", "blocked", "rate_limited",
    "unavailable", "invalid", "no_session",
]  # fmt: skip


# What each `PollFailureKind` means to a user: shown with the monitor's last error, and in
# the alert that tells its owner it stopped.
FAILURE_EXPLAINED: dict[str, str] = {
    "suspected_block": "The marketplace answered with an empty or shrunken feed, which usually "
    "means it is blocking us; no listing was marked sold and the monitor is backing off.",
    "filters_ignored": "The marketplace ignored the catalogue's filters, so the answer was "
    "discarded; no listing was marked sold.",
    "profile_moved": "The marketplace moved its API; the service is probing for the new one.",
    "blocked": "The marketplace refused our requests (bot protection); the monitor is backing "
    "off and will try again later.",
    "rate_limited": "The marketplace asked us to slow down; the monitor waits as long as it "
    "asked before checking again.",
    "unavailable": "The marketplace did not answer, or answered with a server error; the "
    "monitor will try again.",
    "invalid": "The marketplace's answer could not be read (malformed or cut short), so it "
    "was discarded.",
    "no_session": "The marketplace gives its session only to a real browser, and none could "
    "open one yet; the monitor stays active and checks again as soon as a session exists.",
}


@dataclass(frozen=True, slots=True)
class NewMonitor:
    """What creating a monitor takes (`store.monitors.create`): it starts `paused`, due to
    poll at once (its bootstrap poll makes it `active`)."""

    monitor_id: str
    workspace_id: str
    url: str
    label: str | None
    interval_seconds: int
    page_cap: int
    source_analysis_id: str | None = None  # the analysis it was started from


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
    last_error_kind: str | None = None  # a `PollFailureKind` of the last failed poll


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
    condition_raw: str | None = None  # the label as the site wrote it (localised)
    category_name: str | None = None
    total_price: Decimal | None = None  # what the buyer pays: price + service fee
    service_fee: Decimal | None = None
    promoted: bool = False  # a paid placement, mixed into the feed out of date order
    seller_login: str | None = None
    seller_business: bool | None = None  # a business (pro) seller, when the feed says


@dataclass(frozen=True, slots=True)
class ConfirmedState:
    """The state of a listing that left the feed, and how it was established."""

    item_id: int
    state: ListingState
    evidence: Evidence = "detail_api"
    category_name: str | None = None  # what the source called its category, when it did


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
    # Live listings that should have been in the feed's window (newer than its oldest organic
    # listing, or the whole feed was read) yet were missing, whose state was asked this poll
    # and answered without one (no source could tell). Absences are counted; at
    # `likely_after` in a row the listing becomes a likely sale (state "sold", evidence
    # "absence"). Seen again, or confirmed by a source, the count restarts.
    absent: tuple[int, ...] = ()
    likely_after: int = 3
    # When the observations happened on the clock that stamps them (`clock`): the market's
    # own when it stated a believable one, so durations are the market's (an accelerated
    # simulator's too). None: `finished_at`, on the service's clock. `started_at`,
    # `finished_at` and `next_poll_at` are always the service's: they schedule the monitor.
    observed_at: datetime | None = None
    clock: str = "service"
    # Missing from the window like `absent`, but not asked about (the poll's confirmation
    # budget ran out) or refused an answer (a 429, a block page, an outage): unknown. They
    # are marked out of the feed; their absence count neither advances nor restarts.
    unknown: tuple[int, ...] = ()
    # Places in publication order decided this poll (`listings.feed_rank`, see `FeedOrder`),
    # of listings seen in the feed: written as given.
    ranks: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LiveListing:
    """A listing held open or reserved: what deciding whether it left the feed needs."""

    item_id: int
    last_seen_at: datetime
    feed_rank: int | None  # its place in publication order; None: never seen organically
    category_id: int | None


@dataclass(frozen=True, slots=True)
class FeedOrder:
    """What a monitor has learnt of its feed's publication order, read before a poll decides
    which missing listings left the feed's window. A rank (`listings.feed_rank`) is a listing's
    place in publication order, higher is newer, as the engine placed it from the feeds it saw
    (`engine.monitors._feed_window`); the store only keeps it.

    `live`: every listing held open or reserved. `ranks`: the ranks of those and of the asked
    listings (the feed's) that have one. `lowest`, `highest`: the extreme ranks of every
    listing of the monitor (None: none has a rank yet)."""

    live: dict[int, LiveListing]
    ranks: dict[int, int]
    lowest: int | None
    highest: int | None


@dataclass(frozen=True, slots=True)
class PollFailure:
    """What recording a failed poll takes (`store.monitors.record_poll_error`), under a fresh
    poll id unless given. `kind` (a `PollFailureKind`, None for an ordinary failure) is kept
    with the error until a poll succeeds; after `max_consecutive` failures in a row the
    monitor goes to `error`."""

    started_at: datetime
    error: str
    next_poll_at: datetime
    max_consecutive: int
    kind: str | None = None
    poll_id: str = field(default_factory=lambda: new_id("poll"))
    # The marketplace's failure, not the monitor's (an outage, a block, no session yet): the
    # monitor never goes to `error` for it, and one in `error` (or waiting for its bootstrap)
    # is `active` again, trying within a few intervals.
    keeps_active: bool = False


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
    market_at: datetime | None = None  # the market's clock at this poll, when known
    clock: str | None = None  # what stamped its observations: "market", "service" (None: old)


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
    condition_raw: str | None = None
    category_name: str | None = None
    total_price: Decimal | None = None
    service_fee: Decimal | None = None
    promoted: bool = False
    state_evidence: str | None = None  # an `Evidence` for the current state (None: first seen)
    absent_polls: int = 0


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
    evidence: str | None = None  # an `Evidence` for state events, None for the others


@dataclass(frozen=True, slots=True)
class ListingFilter:
    """What a niche's listings link asks for; None: any. `sort`: "id" (the default),
    "newest", "price", "-price" or "last_change"."""

    states: tuple[str, ...] | None = None
    category_id: int | None = None
    brand: str | None = None
    size: str | None = None
    condition: str | None = None
    price_min: Decimal | None = None
    price_max: Decimal | None = None
    sort: str = "id"

    @property
    def narrows(self) -> bool:
        """True when anything but the states is asked for (the plain pages cannot serve it)."""
        return self != ListingFilter(states=self.states)


@dataclass(frozen=True, slots=True)
class ListingPage:
    listings: list[ListingRecord]
    total: int


@dataclass(frozen=True, slots=True)
class EncodedListingPage:
    """A page whose listings the database wrote as the API's JSON array, each as the API
    writes a `ListingRecord` with `likely` (`store/monitors/listing_json.py`)."""

    listings_json: bytes
    total: int
