"""Words for the figures: why a niche is hot or not, where its sales are heading, and why
its days to sell are withheld. Each takes one niche's numbers and returns one sentence, so a
reseller reads the reason beside the rank rather than reverse-engineering it.
"""

from __future__ import annotations

from ._niche_records import pct
from .alerts import AlertRules

# Days to sell are shown only when at least this many sales of known listing age back them:
# the median of fewer is mostly luck.
MIN_TIMED_SALES = 5
# A trend is named only when both halves together hold at least this many sales.
MIN_TREND_SALES = 4
RISING, FALLING = 1.25, 0.8


def hot_reason(
    hot: bool,
    sold: int,
    trials: int,
    low: float | None,
    high: float | None,
    market: float | None,
    rules: AlertRules,
) -> str:
    """Why a niche is hot or not, against the market's sell-through (`alerts.hot_mask`)."""
    if market is None:
        return "Not hot: no sale in the whole market yet to compare against."
    if sold < rules.hot_min_sold:
        return (
            f"Not hot yet: {sold} of {trials} listings sold; it takes at least "
            f"{rules.hot_min_sold} sales to call a niche hot."
        )
    interval = f"{pct(low)}-{pct(high)}" if low is not None and high is not None else "unknown"
    head = f"sells through {sold} of {trials} (95% interval {interval})"
    if hot:
        return (
            f"Hot: {head}, clearly above the market's {pct(market)} "
            f"({rules.hot_lift:g}x its odds even at the interval's low end)."
        )
    return (
        f"Not hot: {head}; its low end is not clearly above the market's {pct(market)} "
        f"({rules.hot_lift:g}x the odds needed)."
    )


def trend_direction(recent: int, previous: int) -> str | None:
    """ "rising", "falling" or "steady"; None when the two halves hold too few sales."""
    if recent + previous < MIN_TREND_SALES:
        return None
    if previous == 0:
        return "rising"
    ratio = recent / previous
    if ratio >= RISING:
        return "rising"
    if ratio <= FALLING:
        return "falling"
    return "steady"


def days_note(timed: int, sold: int, median: float | None, high: float | None) -> str | None:
    """Why days to sell are withheld or uncertain (None: shown and well supported)."""
    if sold == 0:
        return "No sale yet."
    if timed < MIN_TIMED_SALES:
        unknown = sold - timed
        extra = (
            f" ({unknown} more sold listing{'s were' if unknown != 1 else ' was'} already on "
            "sale when first seen: age unknown)"
            if unknown
            else ""
        )
        return (
            f"Withheld: only {timed} sale{'s' if timed != 1 else ''} of known listing age"
            f"{extra}; {MIN_TIMED_SALES} are needed."
        )
    if median is None:
        return "Fewer than half of its listings sold in the window: the median is beyond it."
    if high is None:
        return "The interval's upper end is beyond the window: the median is uncertain."
    return None
