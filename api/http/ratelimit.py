"""In-process sliding-window rate limits, timed by `trio.current_time()` (so tests can jump).

One node's memory only: in a cluster each node limits on its own, which is the safe direction
for guessing attacks (the attacker gets at most N x limit) and noted in docs/cluster.md.
"""

from __future__ import annotations

from collections import OrderedDict, deque

import trio


class SlidingWindowLimiter:
    """At most `limit` events per `window` seconds per key; keeps at most `max_keys` keys."""

    def __init__(self, limit: int, window: float, *, max_keys: int = 100_000) -> None:
        self.limit = limit
        self.window = window
        self._max_keys = max_keys
        self._events: OrderedDict[str, deque[float]] = OrderedDict()

    def _live(self, key: str, now: float) -> deque[float]:
        events = self._events.get(key)
        if events is None:
            events = deque()
            self._events[key] = events
            while len(self._events) > self._max_keys:
                self._events.popitem(last=False)
        self._events.move_to_end(key)
        while events and events[0] <= now - self.window:
            events.popleft()
        return events

    def retry_after(self, key: str) -> float:
        """Seconds until `key` may act again; 0 if it may act now."""
        now = trio.current_time()
        events = self._live(key, now)
        if len(events) < self.limit:
            return 0.0
        return events[0] + self.window - now

    def hit(self, key: str) -> float:
        """Record an event if allowed. Returns 0 if recorded, else the seconds to wait."""
        wait = self.retry_after(key)
        if wait == 0.0:
            self._events[key].append(trio.current_time())
        return wait

    def reset(self, key: str) -> None:
        self._events.pop(key, None)


class ProgressiveDelay(SlidingWindowLimiter):
    """Failures per key in a sliding window, where past `free` failures each further attempt
    must wait `2 ** (failures - free)` seconds (at most `cap`) after the latest failure.

    Unlike a lockout, the wait is short and bounded, so whoever makes the failures can only
    slow an account's sign-ins down, never stop them.
    """

    def __init__(self, free: int, window: float, *, cap: float = 60.0) -> None:
        super().__init__(free, window)
        self.cap = cap

    def retry_after(self, key: str) -> float:
        now = trio.current_time()
        failures = self._live(key, now)
        if len(failures) < self.limit:
            return 0.0
        delay = min(self.cap, 2.0 ** (len(failures) - self.limit))
        return max(0.0, failures[-1] + delay - now)

    def failed(self, key: str) -> None:
        self._live(key, trio.current_time()).append(trio.current_time())
