"""Bodies of the monitor endpoints."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.http.schemas import MAX_PAGE, OneSource
from api.http.storable import document_storable_text, storable_field

MAX_CATEGORY_ID = 2**31 - 1


class StartMonitorRequest(OneSource):
    sources = ("analysis_id", "url")

    analysis_id: str | None = Field(default=None, min_length=1, max_length=64)
    url: str | None = Field(default=None, min_length=1, max_length=2048)
    label: str | None = Field(default=None, max_length=200)
    interval_seconds: int | None = Field(default=None, ge=1, le=7 * 24 * 3600)


class ListingsQuery(BaseModel):
    """A page of a monitor's listings, narrowed to a niche when its filters are given (the
    links of an analysis' niches use them). A parameter not listed here is refused (422):
    a misspelt filter must not silently return every listing."""

    # Text filters are bound as query parameters: one holding NUL, which PostgreSQL cannot
    # take, is refused here (422) and the document says so.
    model_config = ConfigDict(extra="forbid", json_schema_extra=document_storable_text)
    _storable = field_validator("*", mode="after")(storable_field)

    state: str = Field(default="open", pattern=r"^(open|sold|reserved|deleted|all)$")
    page: int = Field(default=1, ge=1, le=MAX_PAGE)
    page_size: int = Field(default=50, ge=1, le=200)
    # The stored column is a 32-bit integer: a larger id names no category and must not
    # reach the database (PostgreSQL refuses to bind it).
    category: int | None = Field(
        default=None, ge=0, le=MAX_CATEGORY_ID, description="the category id"
    )
    brand: str | None = Field(default=None, min_length=1, max_length=200)
    size: str | None = Field(default=None, min_length=1, max_length=100)
    condition: str | None = Field(default=None, min_length=1, max_length=100)
    # Numbers, not decimal strings: the schema of a Decimal admits any string (even empty),
    # which generated clients would send and validation would refuse.
    price_min: float | None = Field(default=None, ge=0, le=1e9)
    price_max: float | None = Field(default=None, ge=0, le=1e9)
    sort: Literal["id", "newest", "price", "-price", "last_change"] = "id"


class PollOut(BaseModel):
    id: str
    started_at: datetime
    finished_at: datetime
    pages: int
    items: int
    new: int
    changed: int
    confirmed: int
    duration_ms: int
    error: str | None


class MonitorOut(BaseModel):
    id: str
    label: str | None
    url: str
    source_analysis_id: str | None
    status: Literal["paused", "active", "error"]
    bootstrapping: bool
    interval_seconds: int
    page_cap: int
    created_at: datetime
    bootstrapped_at: datetime | None
    last_poll_at: datetime | None
    next_poll_at: datetime | None
    consecutive_errors: int
    total_errors: int
    last_error: str | None
    last_error_kind: (
        Literal[
            "suspected_block",
            "filters_ignored",
            "profile_moved",
            "blocked",
            "rate_limited",
            "unavailable",
            "invalid",
            "no_session",
        ]
        | None
    ) = Field(
        default=None,
        description="Why the last failed check was refused, when the service knows; "
        "null after a successful check or for an ordinary failure.",
    )
    last_error_explanation: str | None = Field(
        default=None, description="`last_error_kind` in a sentence for people."
    )
    polls: int
    market_profile: Literal["2026-09", "legacy"] | None = Field(
        default=None,
        description="Which generation of the marketplace's API the monitor's site speaks "
        "(detected and remembered per site, or configured); shown on a single monitor, null "
        "in lists and before the first check.",
    )
    clock: Literal["market", "service"] | None = Field(
        default=None,
        description="Whose clock stamps the listings' times (`state_changed_at`, "
        "`first_seen_at`, ...): `market`, the time the marketplace states in its answers, or "
        "`service`, ours, when it states none believable. Checks (`last_poll_at`, "
        "`next_poll_at`) are always on ours. Given by a single monitor after its first check; "
        "null in lists.",
    )
    last_check_market_at: datetime | None = Field(
        default=None,
        description="The marketplace's clock at the last successful check, with `clock` "
        "`market`: compare it with `last_poll_at` to see how far the two clocks are apart "
        "(the demo's simulated market runs 60 times faster than ours). Null otherwise.",
    )
    counts: dict[str, int] | None = Field(
        default=None,
        description="Listings per state (`open`, `reserved`, `sold`, `deleted`, which add up "
        "to every listing) and `likely_sold`: of the sold, those sold by absence from the feed "
        "(likely sales no source confirmed); `sold - likely_sold` are confirmed sales. Given "
        "by the list and a single monitor; null only in the answer to start, pause or resume.",
    )


class MonitorList(BaseModel):
    monitors: list[MonitorOut]


class ListingOut(BaseModel):
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
    state: Literal["open", "reserved", "sold", "deleted"]
    state_changed_at: datetime
    in_feed: bool
    condition_raw: str | None = Field(
        default=None, description="The condition as the site wrote it (localised)."
    )
    category_name: str | None = None
    total_price: Decimal | None = Field(
        default=None, description="What the buyer pays: price plus service fee."
    )
    service_fee: Decimal | None = None
    promoted: bool = Field(default=False, description="A paid placement in the feed.")
    state_evidence: Literal["detail_api", "item_page", "absence"] | None = Field(
        default=None,
        description="How the current state was established: the item detail API, the "
        "public item page, or absence from the feed for several checks in a row (a likely "
        "change); null for a listing as the feed showed it.",
    )
    likely: bool = Field(
        default=False,
        description="Sold by absence from the feed: a likely sale, not a confirmed one.",
    )
    absent_polls: int = Field(
        default=0, description="Checks in a row that should have shown it and did not."
    )


class ListingsPage(BaseModel):
    listings: list[ListingOut]
    state: str
    page: int
    page_size: int
    total: int
    pages: int
