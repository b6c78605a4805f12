"""The boxing step of `analyse`: ranked per-niche figures into `NicheStats`, on demand.

An analysis has tens of thousands of niches and boxing each into a record costs more than the
statistics, so the work is split by how often it runs. Once per column (`ranked_columns`):
put it in rank order and turn it into Python values with one `tolist`. Once per niche read
(`_maker`'s `make`, called by `NicheTable`): index plain lists held in closure cells, so
reading a field costs no numpy call and no attribute lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from ._columns import I64
from ._explain import MIN_TIMED_SALES, days_note, hot_reason, trend_direction
from ._frame import Frame
from ._measure import QS, NicheFigures
from ._niche_records import (
    KMCurve,
    NicheKey,
    NicheStats,
    PriceSummary,
    ScoreKind,
    ScoreParts,
    Trend,
)
from ._stats import KMTable
from ._table import NicheTable
from .alerts import AlertRules, MarketRates

_CURVE_POINTS = 200
# A niche's favourites are a float sum, shown as an integer. An import may state any 64-bit
# count, so the sum (or one count near 2**63, which rounds up to 2**63 as a float) can pass
# what an int64 holds, where the cast's answer is undefined (garbage, and a RuntimeWarning):
# it is cut to the int64 range first, the top end to the largest float below 2**63.
_INT64_FLOOR, _INT64_CEILING = -(2.0**63), float(np.nextafter(2.0**63, 0.0))


class RankedColumns(NamedTuple):
    """The figures of `NicheFigures` the records show, in rank order, as Python lists (NaN as
    None; what only history evidence has is all None for a snapshot). `ask` and `sold_prices`
    hold one list per quantile of `QS`; `km*` are withheld (None) below `MIN_TIMED_SALES`."""

    support: list[Any]
    supply: list[Any]
    sold: list[Any]
    reserved: list[Any]
    deleted: list[Any]
    supply_previous: list[Any]
    sell_through: list[Any]
    sell_through_low: list[Any]
    sell_through_high: list[Any]
    sell_through_recent: list[Any]
    sell_through_previous: list[Any]
    ask_n: list[Any]
    ask: list[list[Any]]
    sold_n: list[Any]
    sold_prices: list[list[Any]]
    km: list[Any]
    km_low: list[Any]
    km_high: list[Any]
    timed: list[Any]
    likely: list[Any]
    confirmed: list[Any]
    velocity: list[Any]
    favourites: list[Any]
    listing_days: list[Any]
    recent: list[Any]
    previous: list[Any]
    trend: list[Any]
    hot: list[Any]
    score: list[Any]


def _ranked(values: np.ndarray, order: I64) -> list[Any]:
    """Ranked column as Python values, NaN as None (one `tolist`, no per-item numpy).
    Only the NaN slots are patched: a Python pass over every value cost more than the
    rest of the column."""
    ranked = values[order]
    out: list[Any] = ranked.tolist()
    if values.dtype.kind == "f":
        for i in np.flatnonzero(np.isnan(ranked)).tolist():
            out[i] = None
    return out


def _ranked_rate(num: np.ndarray, den: np.ndarray, order: I64) -> list[float | None]:
    with np.errstate(divide="ignore", invalid="ignore"):
        return _ranked(np.where(den > 0, num / np.where(den > 0, den, 1), np.nan), order)


def _whole(counts: np.ndarray) -> I64:
    """Float counts as int64, rounded and cut to its range (NaN as 0, as sums read it)."""
    bounded = np.clip(np.nan_to_num(counts), _INT64_FLOOR, _INT64_CEILING)
    return np.rint(bounded).astype(np.int64)


def ranked_columns(f: Frame, m: NicheFigures, hot: np.ndarray, order: I64) -> RankedColumns:
    """The columns of `m` (and `hot`) the records show, ranked by `order`."""

    def col(values: np.ndarray) -> list[Any]:
        return _ranked(values, order)

    def rate(num: np.ndarray, den: np.ndarray) -> list[float | None]:
        return _ranked_rate(num, den, order)

    none: list[Any] = [None] * f.n_niches
    h, km = f.history, m.km
    shown = m.timed >= MIN_TIMED_SALES  # days to sell are withheld below this
    return RankedColumns(
        support=col(m.support),
        supply=col(m.supply),
        sold=col(m.sold),
        reserved=col(m.reserved),
        deleted=col(m.deleted),
        supply_previous=col(m.open_mid),
        sell_through=rate(m.sold, m.sold + m.supply) if h else none,
        sell_through_low=col(m.sell_through_low) if h else none,
        sell_through_high=col(m.sell_through_high) if h else none,
        sell_through_recent=rate(m.recent, m.recent + m.supply) if h else none,
        sell_through_previous=rate(m.previous, m.previous + m.open_mid) if h else none,
        ask_n=col(m.ask_n),
        ask=[col(m.ask_q[j]) for j in range(len(QS))],
        sold_n=col(m.sold_n),
        sold_prices=[col(m.sold_q[j]) for j in range(len(QS))],
        km=col(np.where(shown, km.median, np.nan)) if km is not None else none,
        km_low=col(np.where(shown, km.median_low, np.nan)) if km is not None else none,
        km_high=col(np.where(shown, km.median_high, np.nan)) if km is not None else none,
        timed=col(m.timed),
        likely=col(m.likely_sold),
        confirmed=col(m.sold - m.likely_sold if f.include_likely else m.sold),
        velocity=col(np.where(m.listing_days > 0, m.velocity, np.nan)),
        favourites=col(_whole(m.favourites)),
        listing_days=col(m.listing_days),
        recent=col(m.recent),
        previous=col(m.previous),
        trend=rate(m.recent, m.previous) if h else none,
        hot=col(hot),
        score=col(m.score),
    )


class Boxing(NamedTuple):
    """What boxing a niche into its record needs besides its ranked figures."""

    order: I64  # the frame's niche at each rank
    key_of: Callable[[int], NicheKey]  # frame niche i's key
    km: KMTable | None  # survival curves, drawn for the top `top_n` niches
    top_n: int
    history: bool
    score_kind: ScoreKind
    score_parts: Callable[[int, NicheKey, str | None], ScoreParts] | None
    why_hot: Callable[[int], str]
    currency: str | None
    listed: Mapping[int, PriceSummary]  # frame niche -> what it asked when first seen (top)


def niche_table(
    f: Frame,
    m: NicheFigures,
    hot: np.ndarray,
    order: I64,
    key_of: Callable[[int], NicheKey],
    *,
    top_n: int,
    currency: str | None,
    market: MarketRates,
    rules: AlertRules,
    listed: Mapping[int, PriceSummary],
) -> NicheTable:
    """The niches in rank order (`order`: the frame's niche at each rank), each boxed into
    its `NicheStats` when first read; the top `top_n` carry their survival curve and, from
    `listed`, what they asked when first seen."""
    columns = ranked_columns(f, m, hot, order)
    h = f.history
    score_kind: ScoreKind = "profit_per_listing_day" if h else "demand_proxy"
    score_parts = m.parts.ranked(order) if m.parts is not None else None
    why_hot = _hot_reasons(columns, market, rules)
    boxing = Boxing(
        order, key_of, m.km, top_n, h, score_kind, score_parts, why_hot, currency, listed
    )
    return NicheTable(len(order), _maker(columns, boxing))


def _hot_reasons(c: RankedColumns, market: MarketRates, rules: AlertRules) -> Callable[[int], str]:
    """Why the niche at rank r is hot or not (`hot_reason`), from its ranked figures."""
    c_sold, c_supply, c_hot = c.sold, c.supply, c.hot
    c_low, c_high = c.sell_through_low, c.sell_through_high

    def why_hot(r: int) -> str:
        trials = c_sold[r] + c_supply[r]
        return hot_reason(c_hot[r], c_sold[r], trials, c_low[r], c_high[r], market.overall, rules)

    return why_hot


def _maker(c: RankedColumns, b: Boxing) -> Callable[[int], NicheStats]:
    """The record of the niche at rank r. The columns are unpacked into locals (in the
    fields' order) so that `make` reads closure cells per niche, not attributes."""
    (c_support, c_supply, c_sold, c_reserved, c_deleted, c_mid, c_st, c_low, c_high,
     c_st_recent, c_st_prev, ask_ns, ask, sold_ns, sld, c_km, c_km_low, c_km_high, c_timed,
     c_likely, c_confirmed, c_velocity, c_favs, c_days, c_recent, c_previous, c_trend,
     c_hot, c_score) = c  # fmt: skip
    order, key_of, km, top_n, h, score_kind, score_parts, why_hot, currency, listed = b

    def make(r: int) -> NicheStats:
        i = int(order[r])
        key = key_of(i)
        return NicheStats(
            rank=r + 1,
            key=key,
            support=c_support[r],
            supply=c_supply[r],
            sold=c_sold[r],
            reserved=c_reserved[r],
            deleted=c_deleted[r],
            supply_previous=c_mid[r],
            sell_through=c_st[r],
            sell_through_low=c_low[r],
            sell_through_high=c_high[r],
            sell_through_recent=c_st_recent[r],
            sell_through_previous=c_st_prev[r],
            ask_price=PriceSummary(
                ask_ns[r], ask[0][r], ask[1][r], ask[2][r], ask[3][r], ask[4][r]
            ),
            sold_price=PriceSummary(
                sold_ns[r], sld[0][r], sld[1][r], sld[2][r], sld[3][r], sld[4][r]
            ),
            km_median_days=c_km[r],
            km_curve=_curve(km, i) if km is not None and r < top_n else None,
            demand_velocity=c_velocity[r],
            favourites=c_favs[r],
            listing_days=c_days[r],
            trend=Trend(
                c_recent[r], c_previous[r], c_trend[r], trend_direction(c_recent[r], c_previous[r])
            )
            if h
            else None,
            hot=c_hot[r],
            score=c_score[r],
            score_kind=score_kind,
            sold_confirmed=c_confirmed[r],
            sold_likely=c_likely[r],
            km_median_low=c_km_low[r],
            km_median_high=c_km_high[r],
            days_note=days_note(c_timed[r], c_sold[r], c_km[r], c_km_high[r]) if h else None,
            score_parts=score_parts(r, key, currency) if score_parts is not None else None,
            hot_reason=why_hot(r) if h else None,
            listed_price=listed.get(i),
        )

    return make


def _curve(km: KMTable, i: int) -> KMCurve:
    time, survival, at_risk, _ = km.curve(i)
    if len(time) > _CURVE_POINTS:
        pick = np.unique(np.linspace(0, len(time) - 1, _CURVE_POINTS).round().astype(np.int64))
        time, survival, at_risk = time[pick], survival[pick], at_risk[pick]
    return KMCurve(
        days=(0.0, *np.round(time, 4).tolist()),
        survival=(1.0, *np.round(survival, 6).tolist()),
        at_risk=(int(at_risk[0]) if len(at_risk) else 0, *at_risk.astype(int).tolist()),
    )
