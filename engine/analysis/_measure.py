"""The statistics step of `analyse`: every per-niche figure, as numpy columns.

Counts by state and by half of the window, Wilson intervals, price quantiles, demand velocity,
Kaplan-Meier time to sell and the score (definitions in `_analyse`). Each figure is one grouped
numpy pass over the window's listings (bincount, grouped quantiles, grouped Kaplan-Meier), so
the cost grows with the listings, never with a Python loop over them. The columns are indexed
like the frame's niches; ranking them and boxing them into records come after (`_niche_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._columns import DELETED, F64, I64, OPEN, RESERVED, SOLD, STATES
from ._frame import DAY, Frame
from ._score import ScoreColumns, history_scores
from ._stats import KMTable, grouped_quantiles, kaplan_meier, wilson

# The price quantiles, in `PriceSummary`'s order: median, quartiles, 10th and 90th percentiles.
QS = (0.5, 0.25, 0.75, 0.1, 0.9)


@dataclass(frozen=True, eq=False)
class NicheFigures:
    """Per niche, indexed like the frame's niches (not by rank)."""

    support: I64  # listings alive at some point of the window
    supply: I64  # open now
    reserved: I64  # reserved now
    sold: I64  # sold in the window
    deleted: I64  # deleted in the window
    recent: I64  # sold in the recent half
    previous: I64  # sold in the previous half
    open_mid: I64  # open at the midpoint: the previous half's supply
    sell_through_low: F64  # Wilson 95% interval of sold / (sold + supply)
    sell_through_high: F64
    ask_n: I64  # open listings with a price
    ask_q: F64  # their price quantiles (`QS` x niches)
    sold_n: I64  # sales with a price
    sold_q: F64  # their price quantiles (`QS` x niches)
    favourites: np.ndarray  # float64 (a weighted bincount)
    listing_days: np.ndarray  # float64: Σ max(1, days on sale)
    velocity: F64  # favourites per listing-day
    timed: I64  # sales of known listing age: what days to sell rest on
    likely_sold: I64  # likely sales (by absence), in `sold` only when included
    km: KMTable | None  # time to sell (history evidence only)
    parts: ScoreColumns | None  # what the history score is made of (history only)
    score: F64


def measure(f: Frame, min_support: int) -> NicheFigures:
    """Every per-niche figure of frame `f` (definitions in `_analyse`)."""
    g, k = f.niche, f.n_niches
    # Index arrays rather than boolean masks for subsets: numpy gathers by index about 3x
    # faster than it compresses by a mask that is true for a random half of the rows.
    is_open, is_sold = np.flatnonzero(f.open_now), np.flatnonzero(f.sold)
    support = np.bincount(g, minlength=k)
    supply, reserved, sold, deleted = _state_counts(g, f.state, k)
    recent = _count(g, f.sold & (f.ended >= f.mid), k)
    st_low, st_high = wilson(sold, sold + supply)
    ask_n, ask_q = grouped_quantiles(g[is_open], f.price[is_open], k, QS)
    sold_n, sold_q = grouped_quantiles(g[is_sold], f.price[is_sold], k, QS)
    days_on_sale = (f.ended - f.born) / DAY
    listing_days = np.bincount(g, weights=np.maximum(days_on_sale, 1.0), minlength=k)
    favs = np.bincount(g, weights=np.nan_to_num(f.favourites), minlength=k)
    velocity = favs / np.maximum(listing_days, 1e-9)
    timed = _count(g, f.sold & f.age_known, k)
    km: KMTable | None = None
    parts: ScoreColumns | None = None
    if f.history:
        km = _time_to_sell(f, days_on_sale)
        parts = history_scores(
            f.codes, sold, supply, sold_n, sold_q[0], km.median, timed, f.window_days, min_support
        )
        score = parts.score
    else:
        thin = support / (support + min_support)
        score = np.nan_to_num(velocity * ask_q[0] * thin)
    return NicheFigures(
        support=support,
        supply=supply,
        reserved=reserved,
        sold=sold,
        deleted=deleted,
        recent=recent,
        previous=sold - recent,
        open_mid=_count(g, f.open_mid, k),
        sell_through_low=st_low,
        sell_through_high=st_high,
        ask_n=ask_n,
        ask_q=ask_q,
        sold_n=sold_n,
        sold_q=sold_q,
        favourites=favs,
        listing_days=listing_days,
        velocity=velocity,
        timed=timed,
        likely_sold=_count(g, f.likely, k),
        km=km,
        parts=parts,
        score=score,
    )


def _count(g: I64, mask: np.ndarray, k: int) -> I64:
    """Per niche, how many rows `mask` holds."""
    return np.bincount(g[np.flatnonzero(mask)], minlength=k)


def _state_counts(g: I64, state: np.ndarray, k: int) -> tuple[I64, I64, I64, I64]:
    """Per niche, how many listings are open, reserved, sold and deleted: one bincount over
    (niche, state) rather than a masked pass per state."""
    n_states = len(STATES)
    if len(state) and (int(state.min()) < 0 or int(state.max()) >= n_states):
        # Out-of-vocabulary states count in none of the four (the masks would skip them).
        keep = (state >= 0) & (state < n_states)
        g, state = g[keep], state[keep]
    by_state = np.bincount(g * n_states + state, minlength=k * n_states).reshape(k, n_states)
    counts = by_state.T.copy()  # one contiguous row per state
    return counts[OPEN], counts[RESERVED], counts[SOLD], counts[DELETED]


def _time_to_sell(f: Frame, days_on_sale: F64) -> KMTable:
    """Kaplan-Meier days to sell per niche, with delayed entry at first sight. Listings of
    unknown age take no part (`_frame`): exit = entry drops them from the curve, whatever
    their life."""
    entry = np.maximum((f.entered - f.born) / DAY, 0.0)
    return kaplan_meier(
        f.niche, entry, np.where(f.age_known, days_on_sale, entry), f.sold, f.n_niches
    )
