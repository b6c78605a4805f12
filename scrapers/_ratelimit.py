"""Per-origin token bucket, driven by `trio.current_time()` so `autojump_clock` tests it."""

from __future__ import annotations

import math

import trio


class TokenBucket:
    """`rate` tokens per second, at most `burst` saved up; one token per request.

    `take()` waits (FIFO, through a lock) until a token is available. Cancellation while waiting
    consumes no token. `rate <= 0` or `inf` means no limit.
    """

    def __init__(self, rate: float, burst: int) -> None:
        self.configured = rate
        self.rate = rate
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._stamp = trio.current_time()
        self._lock = trio.Lock()

    def reconfigure(self, rate: float) -> None:
        """A new configured pace (cluster mode: the origin's budget split across nodes)."""
        self._refill()
        slowed = self.rate != self.configured
        self.configured = rate
        self.rate = min(self.rate, rate) if slowed and not self.unlimited else rate

    def slow_down(self, floor: float = 0.2) -> None:
        """A 429 arrived: halve the pace (an unlimited bucket starts at 10/s) and drop the
        saved burst, so requests released by a Retry-After window trickle out one by one."""
        self.rate = 10.0 if self.unlimited else max(floor, self.rate / 2)
        self._tokens = 0.0
        self._stamp = trio.current_time()

    def speed_up(self) -> None:
        """A success: win back the configured pace gradually (additive increase)."""
        if self.rate != self.configured:
            self._refill()
            step = 0.1 if self.configured <= 0 or math.isinf(self.configured) else self.configured
            self.rate = self.rate + max(0.05, step * 0.05)
            if self.configured > 0 and not math.isinf(self.configured):
                self.rate = min(self.rate, self.configured)
            elif self.rate >= 1000:
                self.rate = self.configured

    @property
    def unlimited(self) -> bool:
        return self.rate <= 0 or math.isinf(self.rate)

    def _refill(self) -> None:
        now = trio.current_time()
        self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    async def take(self) -> None:
        if self.unlimited:
            await trio.lowlevel.checkpoint()
            return
        async with self._lock:
            self._refill()
            # The epsilon stops float dust (0.99999...) from spinning on sleeps too short to move
            # the clock.
            while self._tokens < 1.0 - 1e-9:
                if self.unlimited:  # the pace was lifted while this waited (no rate to wait on)
                    return
                await trio.sleep(max((1.0 - self._tokens) / self.rate, 1e-6))
                self._refill()
            self._tokens = max(0.0, self._tokens - 1.0)
