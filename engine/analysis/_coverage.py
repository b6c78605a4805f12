"""How well a monitor's polls covered an analysis window (`Coverage`).

Every figure of a monitor's analysis rests on what its polls saw: a day without a successful
poll (the service down, the monitor paused, the marketplace blocking it) is a day in which
sales and new listings were not observed as they happened. The coverage says which clock
stamped the observations, how many polls read the feed and how many failed, and where the
gaps are, so that a reader can tell a quiet niche from an unwatched one.
"""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, datetime

import numpy as np

from ._columns import PollMark
from ._frame import MAX_GAP_POLLS, MIN_GAP, Frame
from ._input import AnalysisInput
from ._result import Coverage, Gap

_WHY = {
    "blocked": "the marketplace blocked or refused the polls",
    "timed out": "polls timed out",
    "error": "polls failed",
}
NO_POLLS = "no polls (the service was down or the monitor paused)"


def coverage(data: AnalysisInput, f: Frame) -> Coverage | None:
    """The window's coverage by the monitor's polls; None without poll records."""
    if not data.polls:
        return None
    inside = [p for p in data.polls if f.start - 1.0 <= p.at <= f.now + 1.0]
    ok = np.array([p.at for p in inside if p.ok], np.float64)
    failed = [p for p in inside if not p.ok]
    steps = np.diff(ok)
    typical = float(np.median(steps)) if len(steps) else None
    limit = max(MAX_GAP_POLLS * (typical or 0.0), MIN_GAP)
    marks = [*ok.tolist(), f.now] if len(ok) else [f.start, f.now]
    gaps = [
        Gap(_dt(a), _dt(b), _why(failed, a, b))
        for a, b in itertools.pairwise(marks)
        if b - a > limit
    ]
    clocks = {p.clock or "service" for p in inside if p.ok}
    clock = clocks.pop() if len(clocks) == 1 else ("mixed" if clocks else "service")
    known = int(np.count_nonzero(f.age_known))
    return Coverage(
        clock=clock,
        start=_dt(f.start),
        end=_dt(f.now),
        polls_ok=len(ok),
        polls_failed=len(failed),
        suspected_blocks=sum(1 for p in failed if p.why == "blocked"),
        typical_interval_hours=None if typical is None else round(typical / 3600, 3),
        gaps=tuple(gaps),
        listings_age_known=known,
        listings_age_unknown=len(f.rows) - known,
    )


def _why(failed: list[PollMark], start: float, end: float) -> str:
    kinds = Counter(p.why or "error" for p in failed if start < p.at < end)
    if not kinds:
        return NO_POLLS
    kind, _ = kinds.most_common(1)[0]
    return _WHY.get(kind, "polls failed")


def _dt(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)
