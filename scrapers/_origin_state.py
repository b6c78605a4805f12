"""Per-host and per-egress politeness state: what `MarketClient` keeps for each origin it
talks to and for each way out to the marketplace.

Policy:
- **One budget per egress.** The marketplace counts requests per IP address across all of its
  sites (MARKETPLACE.md), so every site polled through one egress (direct, or the operator's
  proxy) takes from one token bucket, and a 429 from any of them slows them all: the egress
  waits the `Retry-After` and its bucket halves its pace.
- **Breaker and blocks per host.** A site's `www` origin and its API origin are apart: a block
  page or an outage of one never pauses the other (the `www` origin may be challenged while the
  API answers). Each host has a circuit breaker, a concurrency limit and a "not before" instant
  (block windows, a 503's Retry-After) that only ever moves later, so no answer can undercut a
  wait an earlier one asked for.
- A window further away than the caller's `max_wait` is not slept through: `wait_window`
  fails at once with `RateLimited`.
The session of a site (one per site, whatever its hosts) is `_site_sessions`'; a site's two
hosts together, with what the adapter counts of it, are its `SiteState` (`_site_state`).
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
    requests_last_hour: int = 0
    last_success_at: datetime | None = None
    last_block_at: datetime | None = None
    last_block_kind: str | None = None  # "blocked" (403 page), "rate_limited" (429)
    challenges: int = 0  # browser challenges answered (never blocks)
    last_challenge_at: datetime | None = None


@dataclass
class Egress:
    """One way out to the marketplace and its budget, shared by every site sent through it."""

    name: str  # "direct", or the proxy's address without its credentials
    bucket: TokenBucket
    not_before: float = 0.0  # a 429's Retry-After holds every site of this egress
    sent: deque[float] = field(default_factory=deque)  # trio times of requests, last hour

    def hold_off(self, seconds: float) -> None:
        self.not_before = max(self.not_before, trio.current_time() + seconds)

    def requests_last_hour(self) -> int:
        forget_before(self.sent, trio.current_time() - HOUR)
        return len(self.sent)


@dataclass
class OriginState:
    """One host's breaker, window and counters, and the egress it is sent through (see the
    module doc)."""

    breaker: CircuitBreaker
    egress: Egress
    limiter: trio.CapacityLimiter
    not_before: float = 0.0
    sent: deque[float] = field(default_factory=deque)  # trio times of requests, last hour
    last_success_at: datetime | None = None
    last_block_at: datetime | None = None
    last_block_kind: str | None = None
    challenges: int = 0
    last_challenge_at: datetime | None = None

    @property
    def bucket(self) -> TokenBucket:
        return self.egress.bucket

    def note_challenge(self) -> None:
        self.challenges += 1
        self.last_challenge_at = datetime.now(UTC)

    def note_block(self, kind: str) -> None:
        self.last_block_at, self.last_block_kind = datetime.now(UTC), kind

    def hold_off(self, seconds: float) -> None:
        """Send nothing to this host for `seconds` from now, unless a longer window is set."""
        self.not_before = max(self.not_before, trio.current_time() + seconds)

    def note_sent(self) -> None:
        """Count a request going out now (the last hour's tally)."""
        now = trio.current_time()
        for tally in (self.sent, self.egress.sent):
            tally.append(now)
            forget_before(tally, now - HOUR)

    @property
    def window_end(self) -> float:
        """When requests may go out again: this host's window or its egress's, the later."""
        return max(self.not_before, self.egress.not_before)

    async def wait_window(self, origin: str, max_wait: float) -> None:
        """Sleep until `not_before`; `RateLimited` (at once) when that is over `max_wait` away."""
        # Loop: another task may extend the window (a fresh 429) while we sleep.
        while (wait := self.window_end - trio.current_time()) > 0:
            if wait > max_wait:
                raise RateLimited(origin, wait)
            await trio.sleep_until(self.window_end)

    def status(self, origin: str) -> OriginStatus:
        now = trio.current_time()
        forget_before(self.sent, now - HOUR)
        return OriginStatus(
            origin=origin,
            breaker=self.breaker.state,
            consecutive_failures=self.breaker.failures,
            blocked_for=max(0.0, self.window_end - now),
            requests_last_hour=len(self.sent),
            last_success_at=self.last_success_at,
            last_block_at=self.last_block_at,
            last_block_kind=self.last_block_kind,
            challenges=self.challenges,
            last_challenge_at=self.last_challenge_at,
        )


def forget_before(times: deque[float], cutoff: float) -> None:
    while times and times[0] < cutoff:
        times.popleft()
