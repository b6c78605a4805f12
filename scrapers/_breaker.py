"""Per-origin circuit breaker: closed -> open after repeated failures -> half-open probe."""

from __future__ import annotations

import enum

import trio

from .errors import CircuitOpen


class BreakerState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Counts consecutive failures of one origin.

    After `threshold` failures in a row the breaker opens for `reset_after` seconds; then one
    probe is let through (half-open) and its outcome closes or re-opens it. Callers see the state
    through `state`; `before_request()` raises `CircuitOpen` instead of sending.
    """

    def __init__(self, origin: str, threshold: int, reset_after: float) -> None:
        self.origin = origin
        self.threshold = max(1, threshold)
        self.reset_after = reset_after
        self.failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if trio.current_time() - self._opened_at >= self.reset_after:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    def before_request(self) -> bool:
        """Raise `CircuitOpen` unless a request may go out now.

        Returns True when this request claimed the half-open probe; its owner must record a
        verdict or call `release_probe()` (also when cancelled).
        """
        state = self.state
        if state is BreakerState.CLOSED:
            return False
        assert self._opened_at is not None
        if state is BreakerState.HALF_OPEN and not self._probing:
            self._probing = True
            return True
        retry_in = max(0.0, self._opened_at + self.reset_after - trio.current_time())
        raise CircuitOpen(self.origin, retry_in)

    def record_success(self) -> None:
        self.failures = 0
        self._opened_at = None
        self._probing = False

    def record_failure(self) -> None:
        self.failures += 1
        if self._probing or self.failures >= self.threshold:
            self._opened_at = trio.current_time()
        self._probing = False

    def release_probe(self) -> None:
        """The probe ended without a verdict (cancelled, refused locally): let another try."""
        self._probing = False
