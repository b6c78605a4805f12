"""Per-site politeness state: what `MarketClient` keeps for each marketplace site.

Policy: one marketplace site, one budget. A site and its API origin share one `OriginState`:
a token bucket (rate, burst), a concurrency limit, a circuit breaker, a "not before" instant
(Retry-After and block windows) that only ever moves later, so no answer can undercut a wait
an earlier one asked for, the warmed-up session (anon id + bearer token) and what operators
see (requests in the last hour, last success, last block). A window further away than the
caller's `max_wait` is not slept through: `wait_window` fails at once with `RateLimited`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime

import trio

from ._breaker import BreakerState, CircuitBreaker
from ._ratelimit import TokenBucket
from .errors import RateLimited

HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class OriginStatus:
    """What a caller may want to show about one origin."""

    origin: str
    breaker: BreakerState
    consecutive_failures: int
    blocked_for: float  # seconds until requests may go out again (Retry-After / block window)
    has_session: bool
    requests_last_hour: int = 0
    last_success_at: datetime | None = None
    last_block_at: datetime | None = None
    last_block_kind: str | None = None  # "blocked" (403 page), "rate_limited" (429)


@dataclass
class OriginState:
    """One site's budget, breaker, window, session and counters (see the module doc)."""

    breaker: CircuitBreaker
    bucket: TokenBucket
    limiter: trio.CapacityLimiter
    not_before: float = 0.0
    anon_id: str | None = None
    token: str | None = None
    session_lock: trio.Lock = field(default_factory=trio.Lock)
    sent: deque[float] = field(default_factory=deque)  # trio times of requests, last hour
    last_success_at: datetime | None = None
    last_block_at: datetime | None = None
    last_block_kind: str | None = None

    def note_block(self, kind: str) -> None:
        self.last_block_at, self.last_block_kind = datetime.now(UTC), kind

    def hold_off(self, seconds: float) -> None:
        """Send nothing for `seconds` from now, unless a longer window is already set."""
        self.not_before = max(self.not_before, trio.current_time() + seconds)

    def note_sent(self) -> None:
        """Count a request going out now (the last hour's tally)."""
        now = trio.current_time()
        self.sent.append(now)
        forget_before(self.sent, now - HOUR)

    async def wait_window(self, origin: str, max_wait: float) -> None:
        """Sleep until `not_before`; `RateLimited` (at once) when that is over `max_wait` away."""
        # Loop: another task may extend the window (a fresh 429) while we sleep.
        while (wait := self.not_before - trio.current_time()) > 0:
            if wait > max_wait:
                raise RateLimited(origin, wait)
            await trio.sleep_until(self.not_before)

    def status(self, origin: str) -> OriginStatus:
        now = trio.current_time()
        forget_before(self.sent, now - HOUR)
        return OriginStatus(
            origin=origin,
            breaker=self.breaker.state,
            consecutive_failures=self.breaker.failures,
            blocked_for=max(0.0, self.not_before - now),
            has_session=self.token is not None,
            requests_last_hour=len(self.sent),
            last_success_at=self.last_success_at,
            last_block_at=self.last_block_at,
            last_block_kind=self.last_block_kind,
        )


def forget_before(times: deque[float], cutoff: float) -> None:
    while times and times[0] < cutoff:
        times.popleft()
