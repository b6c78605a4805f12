"""Pure rule logic: does a listing pass a rule's filters, how confident is a niche, and
when is an alert due given quiet hours and digests. No database, no clock: `now` is given."""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from decimal import Decimal
from typing import Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .records import Confidence, MinConfidence, RuleFilters

_RANK: dict[str, int] = {"any": 0, "none": 0, "low": 1, "medium": 2, "high": 3}


class ListingLike(Protocol):
    """What filters read of a listing (a `Listing` row has all of it)."""

    @property
    def title(self) -> str | None: ...
    @property
    def brand(self) -> str | None: ...
    @property
    def size(self) -> str | None: ...
    @property
    def condition(self) -> str | None: ...
    @property
    def price(self) -> Decimal | None: ...
    @property
    def seller_id(self) -> int | None: ...
    @property
    def seller_login(self) -> str | None: ...
    @property
    def seller_business(self) -> bool | None: ...


def _fold(value: str | None) -> str:
    return (value or "").strip().casefold()


def _one_of(value: str | None, wanted: tuple[str, ...]) -> bool:
    return not wanted or _fold(value) in {_fold(w) for w in wanted}


def matches(listing: ListingLike, filters: RuleFilters) -> bool:
    """True when `listing` passes every filter. A filter on a field the listing lacks (no
    price under a price bound, unknown seller type under `business`) does not pass: an alert
    the user asked to narrow should not go out on a guess."""
    price = listing.price
    if filters.price_min is not None and (price is None or price < filters.price_min):
        return False
    if filters.price_max is not None and (price is None or price > filters.price_max):
        return False
    if not _one_of(listing.brand, filters.brands) or not _one_of(listing.size, filters.sizes):
        return False
    if not _one_of(listing.condition, filters.conditions):
        return False
    title = _fold(listing.title)
    if filters.include_keywords and not any(_fold(k) in title for k in filters.include_keywords):
        return False
    if any(_fold(k) and _fold(k) in title for k in filters.exclude_keywords):
        return False
    if filters.exclude_sellers:
        seller = {str(listing.seller_id) if listing.seller_id is not None else "",
                  _fold(listing.seller_login)} - {""}  # fmt: skip
        if seller & {_fold(s) for s in filters.exclude_sellers}:
            return False
    return filters.business is None or listing.seller_business is filters.business


def matches_niche(niche: dict[str, Any], filters: RuleFilters) -> bool:
    """The filters that make sense for a whole niche (brand, size, condition) on a niche
    alert's `{brand, size, condition}`; the listing-level ones are ignored."""
    return (
        _one_of(niche.get("brand"), filters.brands)
        and _one_of(niche.get("size"), filters.sizes)
        and _one_of(niche.get("condition"), filters.conditions)
    )


def confidence(sales: int) -> Confidence:
    """A niche's confidence from its sales in the monitor: low 1-4, medium 5-19, high 20+."""
    if sales >= 20:
        return "high"
    if sales >= 5:
        return "medium"
    return "low" if sales >= 1 else "none"


def admits(minimum: MinConfidence, sales: int) -> bool:
    """Whether a niche with `sales` sales reaches `minimum` ("any" admits even none)."""
    return _RANK[confidence(sales)] >= _RANK[minimum]


def niche_subject(
    category_id: int | None, brand: str | None, size: str | None, condition: str | None
) -> str:
    """The outbox subject of a niche: "niche:" and the SHA-1 of its four keys."""
    key = "|".join("" if v is None else str(v) for v in (category_id, brand, size, condition))
    return "niche:" + hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()


def zone(name: str) -> tzinfo:
    """The IANA zone `name`; UTC when unknown (the API refuses unknown names, so this only
    guards rules written by hand or zones a later tzdata dropped)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def parse_hhmm(value: str) -> time:
    """ "HH:MM" as a time; `ValueError` if it is not one."""
    hours, _, minutes = value.partition(":")
    return time(int(hours), int(minutes))


def _at(day: date, moment: time, tz: tzinfo) -> datetime:
    # A wall time skipped by a DST jump resolves to the offset before it (fold=0): at worst an
    # hour late, never lost.
    return datetime.combine(day, moment, tzinfo=tz).astimezone(UTC)


def _next(local_now: datetime, moment: time, tz: tzinfo) -> datetime:
    """The first `moment` (wall time in `tz`) at or after `local_now`, in UTC."""
    today = _at(local_now.date(), moment, tz)
    if today >= local_now:
        return today
    return _at(local_now.date() + timedelta(days=1), moment, tz)


def in_quiet_hours(local: time, start: time, end: time) -> bool:
    """Whether wall time `local` is in [start, end), the span crossing midnight when
    start > end (22:00-07:00). start == end: no quiet hours."""
    if start == end:
        return False
    if start < end:
        return start <= local < end
    return local >= start or local < end


def due_at(
    now: datetime,
    *,
    mode: str,
    digest_hour: int,
    quiet_start: str | None,
    quiet_end: str | None,
    timezone: str,
) -> datetime:
    """When an alert found at `now` (aware) may go: the next `digest_hour`:00 in the rule's
    zone for a digest (quiet hours do not apply: the user chose the hour); for an instant
    rule, `now`, or the end of the quiet hours when `now` falls in them. Unparseable quiet
    hours are ignored (the API checks them)."""
    tz = zone(timezone)
    local_now = now.astimezone(tz)
    if mode == "digest":
        return _next(local_now, time(max(0, min(23, digest_hour))), tz)
    if quiet_start and quiet_end:
        try:
            start, end = parse_hhmm(quiet_start), parse_hhmm(quiet_end)
        except ValueError:
            return now
        if in_quiet_hours(local_now.time().replace(tzinfo=None), start, end):
            return _next(local_now, end, tz)
    return now
