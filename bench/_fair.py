"""Fair comparisons: both sides measured the same number of times, in alternated order, each
ratio the median of the per-round ratios, printed with its range.

A benchmark that compares the product with a baseline measures both once per round, the
product first in rounds 1, 3, ... and second in rounds 2, 4, ... (A B, B A, A B), so that a
drift of the machine's other work, or a side still warming up, weighs on both alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def alternated(
    ours: Callable[[], T], theirs: Callable[[], T], rounds: int
) -> tuple[list[T], list[T]]:
    """Each measurement once per round, ours first in rounds 1, 3, ... and second in the
    others: (ours, theirs), one result per round each."""
    mine: list[T] = []
    other: list[T] = []
    for turn in range(rounds):
        if turn % 2 == 0:
            mine.append(ours())
            other.append(theirs())
        else:
            other.append(theirs())
            mine.append(ours())
    return mine, other


def ratios(top: Sequence[float], bottom: Sequence[float]) -> list[float]:
    """Per-round ratios top / bottom."""
    return [t / b for t, b in zip(top, bottom, strict=True)]


def spread(values: Sequence[float], digits: int = 1) -> str:
    """`median (min-max)` of `values`, or the one value when there is one."""
    mid = statistics.median(values)
    if len(values) == 1:
        return f"{mid:,.{digits}f}"
    return f"{mid:,.{digits}f} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


# At least this many calls per figure (but in smoke runs, whose windows are shorter than
# SMOKE_SECONDS): a busy machine parses a slow page once a second or less, and a figure from
# two calls would be mostly rounding.
MIN_CALLS = 10
SMOKE_SECONDS = 0.5


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of `fn` over about `seconds` (and at least `MIN_CALLS` calls)."""
    needed = MIN_CALLS if seconds >= SMOKE_SECONDS else 1
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds or n < needed:
        fn()
        n += 1
    return n / elapsed
