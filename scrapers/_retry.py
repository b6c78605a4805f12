"""Backoff, `Retry-After` and HTTP-date arithmetic (pure functions)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def full_jitter(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """AWS-style full jitter: uniform in [0, min(cap, base * 2**attempt)]."""
    return rng.uniform(0.0, min(cap, base * (2.0 ** min(attempt, 30))))


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date), or None.

    Dates in the past give 0; garbage gives None (the caller falls back to its own backoff).
    """
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():  # "²".isdigit() holds, and float("²") raises
        return float(value)
    when = http_date(value)
    if when is None:
        return None
    reference = now or datetime.now(UTC)
    return max(0.0, (when - reference).total_seconds())


def http_date(value: str | None) -> datetime | None:
    """An HTTP date (`Date`, `Retry-After`) as an aware datetime; None when absent or not
    one (a header is untrusted input: garbage is no date, never an exception)."""
    if not value:
        return None
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
