"""The client request budget: token buckets and the Retry-After windows announced, by client key.

Each `SimulatorApp` owns one unless it is handed one: the real site's budget is per IP address
and shared across every site (.fr, .de, ...), so several apps standing for several sites share
one `RequestBudget` (`create_simulator_app(world, budget=shared)`) and, with
`Faults.budget_per_ip`, key it by the connection's address. The rate and burst are the calling
app's `Faults.client_rate` and `client_burst`: apps sharing a budget should set the same.
"""

from __future__ import annotations

import math

# Bounds the memory a client minting keys (anon ids) can take; an evicted key starts again with
# a full bucket, which only errs on the generous side.
MAX_KEYS = 65_536


class RequestBudget:
    """Token buckets (`spend`) and the Retry-After windows sent (`announce`, `is_early`).
    Plain state on the server's trio clock, touched only from the event loop (no lock)."""

    def __init__(self) -> None:
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, when)
        self._windows: dict[str, tuple[float, float]] = {}  # key -> (start, end) last announced

    def spend(self, key: str, rate: float, burst: int, now: float) -> int | None:
        """Take one request from `key`'s bucket: None when there was one to take, else the
        whole seconds until there is (the Retry-After to send). `rate` must be positive."""
        tokens, stamp = self._buckets.pop(key, (float(burst), now))
        tokens = min(float(burst), tokens + (now - stamp) * rate)
        if tokens < 1.0:
            self._store(self._buckets, key, (tokens, now))
            return max(1, math.ceil((1.0 - tokens) / rate))
        self._store(self._buckets, key, (tokens - 1.0, now))
        return None

    def announce(self, key: str, now: float, seconds: int) -> None:
        """A 429 told `key` to wait `seconds` from `now` (windows only ever grow)."""
        previous = self._windows.pop(key, (now, now))
        self._store(self._windows, key, (now, max(previous[1], now + seconds)))

    def is_early(self, key: str, arrived: float) -> bool:
        """Inside a window we announced. Requests already in flight when the 429 went out
        arrive right at its start (10 ms grace): those are not the client's fault."""
        start, end = self._windows.get(key, (0.0, -math.inf))
        return start + 0.01 < arrived < end

    def refill(self) -> None:
        """Every bucket full again (new fault knobs); announced windows stay announced."""
        self._buckets.clear()

    @staticmethod
    def _store(table: dict[str, tuple[float, float]], key: str, value: tuple[float, float]) -> None:
        # Popped then re-inserted by the callers, so insertion order is recency: evict oldest.
        table[key] = value
        if len(table) > MAX_KEYS:
            del table[next(iter(table))]
