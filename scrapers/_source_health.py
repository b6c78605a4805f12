"""Whether a source of listing states (the item page, the detail API) can answer on a site.

Policy: a source that refuses (a challenge, a block page, an endpoint refusal) again and again
without one answer for `UNAVAILABLE_AFTER` seconds is *unavailable*; so is a source the site
challenges while no session can be had (`for_good`: it cannot answer until one can). While a
source is unavailable it is not asked, except for one probe every `PROBE_EVERY` seconds that
tells when it is back; one answer makes it available again. Transient failures (429s,
timeouts, outages) prove nothing either way and are not reported here. When every source of a
site is unavailable, a listing that left the feed counts toward a likely sale by absence (the
engine decides; this only says so).
"""

from __future__ import annotations

from dataclasses import dataclass

import trio

UNAVAILABLE_AFTER = 1800.0
PROBE_EVERY = 600.0


@dataclass
class SourceHealth:
    """One state source of one site (times are trio times)."""

    refused_since: float | None = None  # first refusal since the last answer
    unavailable_since: float | None = None
    last_answer_at: float | None = None
    next_probe_at: float = 0.0
    refusals: int = 0

    def answered(self) -> None:
        self.refused_since = self.unavailable_since = None
        self.last_answer_at = trio.current_time()

    def refused(self, *, for_good: bool = False) -> None:
        now = trio.current_time()
        self.refusals += 1
        if self.refused_since is None:
            self.refused_since = now
        if self.unavailable_since is None and (
            for_good or now - self.refused_since >= UNAVAILABLE_AFTER
        ):
            self.unavailable_since = now
        if self.unavailable_since is not None:
            self.next_probe_at = now + PROBE_EVERY

    @property
    def unavailable(self) -> bool:
        return self.unavailable_since is not None

    def may_ask(self) -> bool:
        """Available, or unavailable with a probe due (the probe is then taken)."""
        if self.unavailable_since is None:
            return True
        now = trio.current_time()
        if now < self.next_probe_at:
            return False
        self.next_probe_at = now + PROBE_EVERY  # one probe per period, however many ask
        return True

    def describe(self) -> str:
        """`available`, `refusing` or `unavailable` (what operators see)."""
        if self.unavailable_since is not None:
            return "unavailable"
        return "refusing" if self.refused_since is not None else "available"
