"""The history score and what it is made of, as columns (one entry per niche).

See `_analyse` for the definition: sell-through, median sold price and days to sell, each
shrunk towards the niche's parent (empirical Bayes), then Wilson's lower bound of the shrunk
sell-through on the niche's own trials x price / max(1, days). `ScoreColumns` keeps every
intermediate figure so that a reader can see why a niche ranks where it does
(`score_parts`), rather than a bare number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._columns import F64, I64
from ._niche_records import NicheKey, ScoreParts
from ._niches import NicheCodes
from ._stats import group_mean, shrink, wilson


@dataclass(frozen=True, eq=False)
class ScoreColumns:
    """Per niche: the score and its parts, raw and shrunk, with the parent's figures."""

    score: F64
    rate: F64
    rate_shrunk: F64
    rate_low: F64
    price: F64
    price_shrunk: F64
    days: F64
    days_from_km: np.ndarray
    days_shrunk: F64
    parent_rate: F64
    parent_price: F64
    parent_days: F64
    strength: int

    def ranked(self, order: I64) -> Callable[[int, NicheKey, str | None], ScoreParts]:
        """A maker of the parts of the niche at rank r (its key and the currency given):
        the columns are ranked and turned into Python values once, not per niche."""
        columns = [
            _values(a[order])
            for a in (
                self.rate,
                self.rate_shrunk,
                self.rate_low,
                self.price,
                self.price_shrunk,
                self.days,
                self.days_shrunk,
                self.parent_rate,
                self.parent_price,
                self.parent_days,
            )
        ]
        scores = self.score[order].tolist()
        from_km = self.days_from_km[order].tolist()

        def make(r: int, key: NicheKey, currency: str | None) -> ScoreParts:
            rate, shrunk, low, price, price_s, days, days_s, p_rate, p_price, p_days = (
                c[r] for c in columns
            )
            return ScoreParts(
                score=scores[r],
                sell_through=rate,
                sell_through_shrunk=shrunk,
                sell_through_low=low,
                price=price,
                price_shrunk=price_s,
                days=days,
                days_from="kaplan_meier" if from_km[r] else "window",
                days_shrunk=days_s,
                parent_label=parent_label(key),
                parent_sell_through=p_rate,
                parent_price=p_price,
                parent_days=p_days,
                prior_weight=self.strength,
                currency=currency,
            )

        return make


def _values(array: F64) -> list[float | None]:
    out: list[float | None] = array.tolist()
    for i in np.flatnonzero(np.isnan(array)).tolist():
        out[i] = None
    return out


def parent_label(key: NicheKey) -> str:
    """The niche whose record a niche's figures are shrunk towards (`_parent_mean`)."""
    category = key.category_label or "Any category"
    if key.level == "category":
        return f"{category}, all brands"
    return f"{category} · {key.brand or 'no brand given'}, all sizes and conditions"


def history_scores(
    codes: NicheCodes,
    sold: I64,
    supply: I64,
    priced: I64,
    median_sold: F64,
    km_median: F64,
    timed: I64,
    window_days: float,
    strength: int,
) -> ScoreColumns:
    """The history score of every niche and its parts. `km_median` is the Kaplan-Meier median
    days to sell (NaN: not reached, then the window length stands in), backed by `timed`
    sales of known listing age; `priced` sales have a known price. No sales: score 0."""
    trials = sold + supply
    parent = _parent_mean(codes)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(trials > 0, sold / np.maximum(trials, 1), np.nan)
    rate_parent = parent(rate, trials)
    rate_shrunk = shrink(rate, trials, rate_parent, strength)
    low, _ = wilson(rate_shrunk * trials, trials)
    price_parent = parent(median_sold, priced)
    price = shrink(median_sold, priced, price_parent, strength)
    from_km = ~np.isnan(km_median)
    days_raw = np.where(from_km, km_median, window_days)
    days_parent = parent(days_raw, timed)
    days = shrink(days_raw, timed, days_parent, strength)
    score = np.nan_to_num(low) * np.nan_to_num(price) / np.maximum(1.0, days)
    return ScoreColumns(
        score=np.where(sold > 0, score, 0.0),
        rate=rate,
        rate_shrunk=rate_shrunk,
        rate_low=low,
        price=median_sold,
        price_shrunk=price,
        days=days_raw,
        days_from_km=from_km,
        days_shrunk=days,
        parent_rate=rate_parent,
        parent_price=price_parent,
        parent_days=days_parent,
        strength=strength,
    )


def _parent_mean(codes: NicheCodes) -> Callable[[F64, F64 | I64], F64]:
    """Per niche, the prior mean of a figure: its weighted mean over the niches of the niche's
    (category, brand) for exact and brand-level niches, over all the niches of its category
    for a category-level one (`group_mean`)."""
    _, cat = np.unique(codes.category_id, return_inverse=True)
    cat = cat.reshape(-1).astype(np.int64)
    coarse = codes.level == 2
    brands = int(codes.brand.max(initial=-1)) + 2
    # Category-level niches belong to no (category, brand): keys of their own, never shared.
    pair_key = np.where(coarse, -1 - cat, cat * brands + codes.brand + 1)
    _, pair = np.unique(pair_key, return_inverse=True)
    pair = pair.reshape(-1).astype(np.int64)

    def mean(values: F64, weights: F64 | I64) -> F64:
        return np.where(  # type: ignore[no-any-return]
            coarse, group_mean(values, weights, cat), group_mean(values, weights, pair)
        )

    return mean
