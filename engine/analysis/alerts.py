"""Alerts: deals, sell-through jumps and new hot niches, each with its reason and numbers.

Definitions (all over the analysis window, split at its midpoint into "previous" and
"recent" halves; only for history evidence: a snapshot has no sales to compare against):

- **Hot niche**: at least `hot_min_sold` sales and the Wilson 95% lower bound of its
  sell-through clearly above the whole market's, on the odds scale: ``low / (1 - low) >=
  hot_lift * m / (1 - m)`` for a market sell-through ``m``. Relative to the market so that a
  uniform market (no niche stands out) raises nothing. Odds rather than the rates themselves:
  where sales are rare the two agree (odds ~ rate), but over a month most listings of a
  market sell, and "1.5 times a sell-through of 70%" is beyond 100%, so a rule on rates
  flagged nothing at all (no hot niche, hence no deal alert) on a month of history.
- **Deal**: an open listing that is a deal by the service's one definition (`deals`: asking at
  most `deal_ratio` of its niche's median sold price, resting on at least `deal_min_sold`
  sales, the same thresholds a poll's deal alerts use), reported in hot niches only. The best
  `max_deals` (deepest discount) are kept.
- **Sell-through jump**: recent sell-through minus previous at least `jump_min`, with a
  two-proportion z statistic of at least `jump_z` and at least `hot_min_sold` recent sales.
- **New hot niche**: hot in the recent half (against the recent market rate), not hot in the
  previous half (against the previous market rate).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from engine.money import format_money

from ._columns import F64, I64
from ._frame import Frame
from ._input import AnalysisInput
from ._niche_records import NicheKey, pct
from ._result import Alert
from ._stats import Z95, wilson
from .deals import DEAL_MIN_SALES, DEAL_RATIO, deal_mask, discount


@dataclass(frozen=True, slots=True)
class AlertRules:
    hot_lift: float = 1.5
    hot_min_sold: int = 3
    deal_ratio: float = DEAL_RATIO
    deal_min_sold: int = DEAL_MIN_SALES
    max_deals: int = 50
    jump_min: float = 0.15
    jump_z: float = 1.96


@dataclass(frozen=True, slots=True)
class MarketRates:
    """Whole-market sell-through over the window and in each half (None: no trials)."""

    overall: float | None
    recent: float | None
    previous: float | None


@dataclass(frozen=True, eq=False)
class Tallies:
    """Per-niche counts the alerts need, indexed like the frame's niches (not by rank)."""

    sold: I64
    supply: I64
    recent: I64
    previous: I64
    supply_previous: I64
    hot: np.ndarray
    median_sold: F64


def hot_mask(sold: I64, trials: I64, market: float | None, rules: AlertRules) -> np.ndarray:
    """Element-wise "hot": enough sales and a Wilson lower bound clearly above the market,
    on the odds scale (module doc)."""
    if market is None or market >= 1.0:
        return np.zeros(len(sold), bool)
    low, _ = wilson(sold, trials)
    low = np.nan_to_num(low)
    # low / (1 - low) >= lift * odds, without dividing by zero when low is 1.
    clear = low >= (1.0 - low) * rules.hot_lift * market / (1.0 - market)
    return (sold >= rules.hot_min_sold) & (trials > 0) & clear


def find_alerts(
    data: AnalysisInput,
    frame: Frame,
    tallies: Tallies,
    keys: Callable[[int], NicheKey],
    position: I64,
    market: MarketRates,
    rules: AlertRules,
    currency: str | None = None,
) -> list[Alert]:
    """All alerts, deals first (deepest discount first), then jumps, then new hot niches
    (each in rank order). `keys(i)` is frame niche i's key, `position[i]` its rank - 1."""
    if not frame.history:
        return []
    alerts = _deals(data, frame, tallies, keys, rules, currency)
    alerts += _jumps(tallies, keys, position, rules)
    alerts += _new_hot(tallies, keys, position, market, rules)
    return alerts


def _deals(
    data: AnalysisInput,
    frame: Frame,
    t: Tallies,
    keys: Callable[[int], NicheKey],
    rules: AlertRules,
    currency: str | None,
) -> list[Alert]:
    reference, sales = t.median_sold[frame.niche], t.sold[frame.niche]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = frame.price / reference
    deal = deal_mask(frame.price, reference, sales, rules.deal_ratio, rules.deal_min_sold)
    candidate = frame.open_now & t.hot[frame.niche] & deal
    found = np.flatnonzero(candidate)
    found = found[np.lexsort((data.listings.item_id[frame.rows[found]], ratio[found]))]
    titles = data.listings.titles
    alerts: list[Alert] = []
    for i in found[: rules.max_deals].tolist():
        g = int(frame.niche[i])
        key, sold, trials = keys(g), int(t.sold[g]), int(t.sold[g] + t.supply[g])
        row = int(frame.rows[i])
        item_id = int(data.listings.item_id[row])
        price, median = float(frame.price[i]), float(reference[i])
        off = discount(price, median)
        title = titles[row] if titles is not None else None
        what = f"{title!r}" if title else f"Listing {item_id}"
        alerts.append(
            Alert(
                kind="deal",
                niche=key,
                item_id=item_id,
                reason=(
                    f"{what} asks {format_money(price, currency)}, {pct(off)} under what "
                    f"{key.label} sells for (median {format_money(median, currency)} over {sold} "
                    f"sales; {pct(sold / trials)} of its listings sold, a hot niche)"
                ),
                figures={
                    "price": price,
                    "median_sold_price": median,
                    "discount": off,
                    "sell_through": sold / trials,
                    "sold": sold,
                },
            )
        )
    return alerts


def _halves(t: Tallies) -> tuple[I64, I64, I64, I64]:
    """Per niche: sales and trials (sales + unsold supply) in the recent half, then in the
    previous half."""
    return t.recent, t.recent + t.supply, t.previous, t.previous + t.supply_previous


def _fired(
    fire: np.ndarray,
    halves: tuple[I64, I64, I64, I64],
    keys: Callable[[int], NicheKey],
    position: I64,
) -> Iterator[tuple[int, NicheKey, int, int, int, int]]:
    """The niches `fire` marks, in rank order: each one's index and key, and its recent then
    previous sales and trials (`halves`, as the caller had them from `_halves`) as plain
    ints."""
    k1, n1, k0, n0 = halves
    hits = np.flatnonzero(fire)
    for i in hits[np.argsort(position[hits])].tolist():
        yield i, keys(i), int(k1[i]), int(n1[i]), int(k0[i]), int(n0[i])


def _jumps(
    t: Tallies, keys: Callable[[int], NicheKey], position: I64, rules: AlertRules
) -> list[Alert]:
    halves = _halves(t)
    k1, n1, k0, n0 = halves
    with np.errstate(divide="ignore", invalid="ignore"):
        p1, p0 = k1 / n1, k0 / n0
        pooled = (k0 + k1) / (n0 + n1)
        se = np.sqrt(pooled * (1 - pooled) * (1 / n0 + 1 / n1))
        z = (p1 - p0) / se
    fire = (
        (k1 >= rules.hot_min_sold)
        & (n0 > 0)
        & (n1 > 0)
        & (se > 0)
        & (p1 - p0 >= rules.jump_min)
        & (z >= rules.jump_z)
    )
    return [
        Alert(
            kind="sell_through_jump",
            niche=key,
            item_id=None,
            reason=(
                f"{key.label} sells faster: {pct(p1[i])} of its listings sold in the "
                f"recent half of the window ({a1} of {b1}) against {pct(p0[i])} before "
                f"({a0} of {b0}); a jump this size is unlikely by chance (z = {z[i]:.1f})"
            ),
            figures={
                "sell_through_previous": float(p0[i]),
                "sell_through_recent": float(p1[i]),
                "sold_previous": a0,
                "trials_previous": b0,
                "sold_recent": a1,
                "trials_recent": b1,
                "z": float(z[i]),
            },
        )
        for i, key, a1, b1, a0, b0 in _fired(fire, halves, keys, position)
    ]


def _new_hot(
    t: Tallies,
    keys: Callable[[int], NicheKey],
    position: I64,
    market: MarketRates,
    rules: AlertRules,
) -> list[Alert]:
    halves = _halves(t)
    k1, n1, k0, n0 = halves
    fire = hot_mask(k1, n1, market.recent, rules) & ~hot_mask(k0, n0, market.previous, rules)
    low, _ = wilson(k1, n1, Z95)
    return [
        Alert(
            kind="new_hot_niche",
            niche=key,
            item_id=None,
            reason=(
                f"{key.label} is newly hot: {a1} of {b1} listings sold in the recent half "
                f"of the window, at least {pct(low[i])} (95% lower bound) against the "
                f"market's {pct(market.recent or 0)}; before, {a0} of {b0} sold"
            ),
            figures={
                "sold_recent": a1,
                "trials_recent": b1,
                "sell_through_recent_low": float(low[i]),
                "market_recent": market.recent,
                "sold_previous": a0,
                "trials_previous": b0,
                "market_previous": market.previous,
            },
        )
        for i, key, a1, b1, a0, b0 in _fired(fire, halves, keys, position)
    ]
