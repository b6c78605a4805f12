"""`analyse`: columnar evidence in, ranked niches, alerts and market flow out.

Definitions (per niche, over the window; "now" is the input's `now`):

- support: listings alive at some point in the window; supply: open now; reserved: reserved
  now; sold / deleted: sold / deleted within the window.
- sell-through = sold / (sold + supply), with a Wilson 95% interval. Recent / previous:
  sales in each half of the window over (those sales + listings open at the end of that half).
- prices: ask = current price of open listings; sold = the last price seen before the sale.
  Median, quartiles (IQR), 10th and 90th percentiles, linear interpolation.
- time to sell: Kaplan-Meier over days since listing, sales are events, deleted and
  still-unsold listings are censored, with delayed entry at the moment the window first saw
  the listing. Only listings whose listing moment is known take part (`_frame.births`: a
  consistent listing date, or listed while the monitor watched); those already on sale at
  first sight with no date count everywhere else. The median (with its 95% interval) is
  shown only when at least `MIN_TIMED_SALES` such sales back it, else None with `days_note`.
- demand velocity = favourites / listing-days, listing-days = Σ max(1, days on sale).
- trend = recent-half sales / previous-half sales (None when the previous half had none).
- sales are confirmed sales (a source saw the listing sold) unless `include_likely_sales`:
  then likely sales (sold by absence from the feed) count too. Left out, a likely-sold
  listing is an unsold listing censored at its last sighting (`_frame`). Both counts are
  reported either way (`counts["sold_confirmed"]`, `counts["sold_likely"]` and a note).

Score (history): ``wilson_low(p~, trials) * y~ / max(1, d~)``: a conservative probability of
selling times what it sells for, per day it takes, so it is a price per listing-day. ``p~``,
``y~`` and ``d~`` are the niche's sell-through ``p = sold / trials`` (trials = sold + supply),
median sold price ``y`` and days to sell ``d`` (Kaplan-Meier median, the window length when
the median is unknown), each shrunk towards its parent's (empirical Bayes, prior worth
``m = min_support`` observations)::

    p~ = (sold + m * P) / (trials + m)
    y~ = (priced * y + m * Y) / (priced + m)      priced = sales with a known price
    d~ = (sold * d + m * D) / (sold + m)

The parent of an exact or brand-level niche is its (category, brand), of a category-level
niche its category: ``P`` is the parent's pooled sell-through (sold / trials summed over its
niches), ``Y`` and ``D`` the means of its niches' ``y`` and ``d`` weighted by ``priced`` and
``sold``.
The lower bound is taken on the niche's own trials: the parent's evidence moves the estimate
but does not narrow the interval (the parent includes the niche, so that would count its sales
twice). Why: a market has tens of sub-niches per (category, brand) and a niche may stand with
`min_support` listings, so some of a few listings each sell fast and dear by luck; Wilson
penalises only the sell-through of such a niche, not its median days or price. Shrinking all
three makes a thin niche rank on its parent's record plus what its own evidence adds, and a
niche that is its parent's only niche (``P, Y, D`` its own figures) keeps its raw figures.
No sales: 0. Score (snapshot, no sales observed): the demand proxy
``demand_velocity * median_ask_price * support / (support + min_support)``, i.e. favourites
per listing-day weighted by price and shrunk towards 0 for thin niches.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from ._coverage import coverage
from ._explain import MIN_TIMED_SALES, days_note, hot_reason, trend_direction
from ._frame import DAY, Frame, build_frame
from ._input import (
    DELETED,
    F64,
    I64,
    KIND_STATE,
    NONE_CODE,
    OPEN,
    RESERVED,
    SOLD,
    STATES,
    AnalysisInput,
)
from ._result import (
    Alert,
    AnalysisResult,
    Coverage,
    FlowDay,
    KMCurve,
    NicheKey,
    NicheStats,
    PriceSummary,
    Trend,
    Window,
)
from ._score import ScoreColumns, history_scores
from ._stats import KMTable, grouped_quantiles, kaplan_meier, wilson
from ._table import NicheTable
from .alerts import AlertRules, MarketRates, Tallies, find_alerts, hot_mask

_QS = (0.5, 0.25, 0.75, 0.1, 0.9)
_CURVE_POINTS = 200


def _rate(k: float, n: float) -> float | None:
    return float(k / n) if n > 0 else None


def analyse(
    data: AnalysisInput,
    *,
    top_n: int = 10,
    min_support: int = 5,
    rules: AlertRules | None = None,
    generated_at: datetime | None = None,
    include_likely_sales: bool = False,
) -> AnalysisResult:
    """Rank the niches of `data` and find alerts. Pure and CPU-bound: no I/O, no globals.

    Runs to completion once started (there is nothing to cancel inside); callers that need
    cancellation run it in a worker thread and abandon the result. Raises ValueError on
    nonsensical arguments (top_n < 1, min_support < 1).
    """
    if top_n < 1 or min_support < 1:
        raise ValueError("top_n and min_support must be at least 1")
    rules = rules or AlertRules()
    f = build_frame(data, min_support=min_support, include_likely=include_likely_sales)
    g, k = f.niche, f.n_niches

    # Index arrays rather than boolean masks for subsets: numpy gathers by index about 3x
    # faster than it compresses by a mask that is true for a random half of the rows.
    is_open, is_sold = np.flatnonzero(f.open_now), np.flatnonzero(f.sold)

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(g[np.flatnonzero(mask)], minlength=k)

    support = np.bincount(g, minlength=k)
    supply, reserved, sold, deleted = _state_counts(g, f.state, k)
    recent = count(f.sold & (f.ended >= f.mid))
    previous = sold - recent
    open_mid = count(f.open_mid)
    st_low, st_high = wilson(sold, sold + supply)

    ask_n, ask_q = grouped_quantiles(g[is_open], f.price[is_open], k, _QS)
    sold_n, sold_q = grouped_quantiles(g[is_sold], f.price[is_sold], k, _QS)

    days_on_sale = (f.ended - f.born) / DAY
    listing_days = np.bincount(g, weights=np.maximum(days_on_sale, 1.0), minlength=k)
    favs = np.bincount(g, weights=np.nan_to_num(f.favourites), minlength=k)
    velocity = favs / np.maximum(listing_days, 1e-9)

    km: KMTable | None = None
    parts: ScoreColumns | None = None
    timed = np.bincount(g[np.flatnonzero(f.sold & f.age_known)], minlength=k)
    if f.history:
        # Listings of unknown age take no part in time to sell (`_frame`): exit = entry drops
        # them from the curve, whatever their life.
        entry = np.maximum((f.entered - f.born) / DAY, 0.0)
        km = kaplan_meier(g, entry, np.where(f.age_known, days_on_sale, entry), f.sold, k)
        parts = history_scores(
            f.codes, sold, supply, sold_n, sold_q[0], km.median, timed, f.window_days, min_support
        )
        score = parts.score
    else:
        thin = support / (support + min_support)
        score = np.nan_to_num(velocity * ask_q[0] * thin)

    market = MarketRates(
        overall=_rate(sold.sum(), sold.sum() + supply.sum()),
        recent=_rate(recent.sum(), recent.sum() + supply.sum()),
        previous=_rate(previous.sum(), previous.sum() + open_mid.sum()),
    )
    hot = hot_mask(sold, sold + supply, market.overall, rules) if f.history else np.zeros(k, bool)
    # Ties: more listings first, then niche number (exact before coarser, key order).
    order = np.lexsort((np.arange(k), -support, -score))
    position = np.empty(k, np.int64)
    position[order] = np.arange(k)

    def col(values: np.ndarray) -> list[Any]:
        """Ranked column as Python values, NaN as None (one `tolist`, no per-item numpy).
        Only the NaN slots are patched: a Python pass over every value cost more than the
        rest of the column."""
        ranked = values[order]
        out: list[Any] = ranked.tolist()
        if values.dtype.kind == "f":
            for i in np.flatnonzero(np.isnan(ranked)).tolist():
                out[i] = None
        return out

    def rate(num: np.ndarray, den: np.ndarray) -> list[float | None]:
        with np.errstate(divide="ignore", invalid="ignore"):
            return col(np.where(den > 0, num / np.where(den > 0, den, 1), np.nan))

    none: list[Any] = [None] * k
    h = f.history
    ask = [col(ask_q[j]) for j in range(len(_QS))]
    sld = [col(sold_q[j]) for j in range(len(_QS))]
    ask_ns, sold_ns = col(ask_n), col(sold_n)
    c_support, c_supply, c_sold = col(support), col(supply), col(sold)
    c_reserved, c_deleted, c_mid = col(reserved), col(deleted), col(open_mid)
    c_recent, c_previous = col(recent), col(previous)
    c_st = rate(sold, sold + supply) if h else none
    c_low, c_high = (col(st_low), col(st_high)) if h else (none, none)
    c_st_recent = rate(recent, recent + supply) if h else none
    c_st_prev = rate(previous, previous + open_mid) if h else none
    c_trend = rate(recent, previous) if h else none
    shown = timed >= MIN_TIMED_SALES  # days to sell are withheld below this
    c_km = col(np.where(shown, km.median, np.nan)) if km is not None else none
    c_km_low = col(np.where(shown, km.median_low, np.nan)) if km is not None else none
    c_km_high = col(np.where(shown, km.median_high, np.nan)) if km is not None else none
    c_timed = col(timed)
    likely_sold = np.bincount(g[np.flatnonzero(f.likely)], minlength=k)
    c_likely = col(likely_sold)
    c_confirmed = col(sold - likely_sold if f.include_likely else sold)
    currency = data.listings.currencies[0] if len(data.listings.currencies) == 1 else None
    c_velocity = col(np.where(listing_days > 0, velocity, np.nan))
    c_favs, c_days = col(np.rint(favs).astype(np.int64)), col(listing_days)
    c_hot, c_score = col(hot), col(score)
    score_kind: Literal["profit_per_listing_day", "demand_proxy"] = (
        "profit_per_listing_day" if h else "demand_proxy"
    )

    score_parts = parts.ranked(order) if parts is not None else None

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
        )

    def why_hot(r: int) -> str:
        trials = c_sold[r] + c_supply[r]
        return hot_reason(c_hot[r], c_sold[r], trials, c_low[r], c_high[r], market.overall, rules)

    niches = NicheTable(k, make)
    tallies = Tallies(
        sold=sold,
        supply=supply,
        recent=recent,
        previous=previous,
        supply_previous=open_mid,
        hot=hot,
        median_sold=sold_q[0],
    )
    key_cache: dict[int, NicheKey] = {}

    def key_of(i: int) -> NicheKey:
        key = key_cache.get(i)
        if key is None:
            key = key_cache[i] = f.codes.key(i, data)
        return key

    alerts = find_alerts(data, f, tallies, key_of, position, market, rules, currency)
    covered = coverage(data, f)
    return AnalysisResult(
        evidence="history" if f.history else "snapshot",
        window=_window(f),
        generated_at=generated_at or datetime.now(UTC),
        niches=niches,
        alerts=tuple(alerts),
        flow=_flow(data, f),
        counts=_counts(data, f, alerts),
        notes=tuple(_notes(data, f, min_support) + _coverage_notes(covered)),
        top_n=top_n,
        min_support=min_support,
        source=data.source,
        include_likely_sales=include_likely_sales,
        coverage=covered,
        currency=currency,
    )


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


def _window(f: Frame) -> Window:
    def dt(t: float) -> datetime:
        return datetime.fromtimestamp(t, UTC)

    return Window(start=dt(f.start), end=dt(f.now), days=f.window_days, midpoint=dt(f.mid))


# The market-flow series covers at most this many days, the most recent: one row per day, so
# an imported export whose timestamps span centuries would otherwise cost minutes of CPU.
MAX_FLOW_DAYS = 366


def _flow(data: AnalysisInput, f: Frame) -> tuple[FlowDay, ...]:
    last_day = int(f.now // DAY)
    first_day = max(int(f.start // DAY), last_day - MAX_FLOW_DAYS + 1)
    n_days = last_day - first_day + 1

    def per_day(times: np.ndarray, among: np.ndarray) -> np.ndarray:
        """How many of `times` (those `among`) fall on each day of the series."""
        inside = among & (times >= max(f.start, first_day * DAY)) & (times <= f.now)
        days = _floor_days(times[np.flatnonzero(inside)])
        return np.bincount(days - first_day, minlength=n_days)

    lst, ev = data.listings, data.events
    # Listings seen at a monitor's first poll with no listing date were there before it
    # started: counting them as "new" would draw a spike on day one.
    bootstrap = np.isnan(lst.listed_at[f.rows]) & (lst.first_seen_at[f.rows] <= f.obs_start + 1)
    new = per_day(f.born, ~bootstrap)
    if f.state_events:
        st = ev.kind == KIND_STATE
        if f.skip_likely_events:
            assert ev.likely is not None
            st &= ~ev.likely
        sold = per_day(ev.at, st & (ev.to_state == SOLD))
        deleted = per_day(ev.at, st & (ev.to_state == DELETED))
    else:
        sold = per_day(f.ended, f.sold)
        deleted = per_day(f.ended, f.state == DELETED)
    return tuple(
        FlowDay(
            date=datetime.fromtimestamp((first_day + d) * DAY, UTC).date().isoformat(),
            new=int(new[d]),
            sold=int(sold[d]),
            deleted=int(deleted[d]),
        )
        for d in range(n_days)
    )


def _floor_days(times: F64) -> I64:
    """``times // DAY`` as int64, exactly (the floor of the true quotient), for finite times.
    numpy's float floor-divide goes through fmod and costs ~5x a division: divide, floor,
    then correct the rare quotient that rounded across a whole day (day multiples of DAY
    are exact floats)."""
    q = np.floor(times / DAY)
    q -= q * DAY > times
    q += (q + 1.0) * DAY <= times
    return q.astype(np.int64)  # type: ignore[no-any-return]


def _counts(data: AnalysisInput, f: Frame, alerts: list[Alert]) -> dict[str, int]:
    out = {
        "listings": len(data.listings),
        "events": len(data.events),
        "listings_in_window": len(f.rows),
        "open": int(f.open_now.sum()),
        "reserved": int((f.state == RESERVED).sum()),
        "sold": int(f.sold.sum()),
        "deleted": int((f.state == DELETED).sum()),
        "niches": f.n_niches,
    }
    for number, level in enumerate(("exact", "brand", "category")):
        out[f"niches_{level}"] = int(np.count_nonzero(f.codes.level == number))
    for kind in ("deal", "sell_through_jump", "new_hot_niche"):
        out[f"alerts_{kind}"] = sum(1 for a in alerts if a.kind == kind)
    likely = int(np.count_nonzero(f.likely))
    out["sold_confirmed"] = out["sold"] - (likely if f.include_likely else 0)
    out["sold_likely"] = likely
    return out


def _coverage_notes(covered: Coverage | None) -> list[str]:
    if covered is None:
        return []
    notes = []
    if covered.clock != "market":
        notes.append(
            "Some observations are stamped on the service's clock, not the marketplace's: "
            "the marketplace's stated time was missing or not believable there."
            if covered.clock == "mixed"
            else "Observations are stamped on the service's clock (the marketplace stated no "
            "believable time of its own)."
        )
    if covered.gaps:
        hours = sum((g.end - g.start).total_seconds() for g in covered.gaps) / 3600
        notes.append(
            f"The polls missed {len(covered.gaps)} "
            f"stretch{'es' if len(covered.gaps) != 1 else ''} of the window "
            f"({hours:.1f} hours in all: {covered.gaps[0].why}"
            + (", and more" if len(covered.gaps) > 1 else "")
            + "). What changed in them was seen late, and listings that appeared and went "
            "within them were not seen at all."
        )
    if covered.polls_failed:
        notes.append(
            f"{_plural(covered.polls_failed, 'poll')} of {covered.polls_ok + covered.polls_failed} "
            f"failed ({covered.suspected_blocks} suspected "
            f"block{'s' if covered.suspected_blocks != 1 else ''})."
        )
    return notes


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _notes(data: AnalysisInput, f: Frame, min_support: int) -> list[str]:
    notes: list[str] = []
    if not f.history:
        notes.append(
            "Snapshot evidence (one scrape, no state history): no sell-through, sold prices, "
            "time to sell, trend or alerts; niches are ranked by the demand proxy "
            "favourites per listing-day x median ask x support/(support+min_support)."
        )
    else:
        notes.append(
            f"History evidence over {f.window_days:.1f} days; score = Wilson lower bound of "
            "sell-through x median sold price / max(1, Kaplan-Meier median days to sell, or "
            "the window length when the median is not reached), each of the three first "
            "shrunk towards the niche's parent ((category, brand), or the category for the "
            f"category-level niches) as if the parent's figure were worth {min_support} more "
            "listings (sales, for price and days)."
        )
        if f.window_days < 2:
            notes.append("The history is shorter than two days: rates are very uncertain.")
    requested = data.window_days
    if requested is not None and f.window_days + 1e-6 < requested:
        notes.append(
            f"Requested a {requested:g}-day window but the evidence only covers "
            f"{f.window_days:.1f} days; the window was shortened to what was observed."
        )
    unknown_age = int(np.count_nonzero(~f.age_known))
    if f.history and unknown_age:
        notes.append(
            f"{_plural(unknown_age, 'listing')} were already on sale when first seen, with no "
            "listing date the marketplace still gives: they count in supply, sales and "
            "sell-through, but not in days to sell (their age is unknown). Days to sell come "
            "from listings that appeared while watched."
        )
    if not f.state_events and f.history:
        notes.append("No state events: states at the window midpoint are inferred from listings.")
    if len(data.listings.currencies) > 1:
        notes.append(
            "Prices mix currencies (" + ", ".join(data.listings.currencies) + "); they are "
            "compared as plain numbers."
        )
    likely = int(np.count_nonzero(f.likely))
    if likely:
        confirmed = int(np.count_nonzero(f.sold)) - (likely if f.include_likely else 0)
        notes.append(
            f"{_plural(confirmed, 'confirmed sale')} (the item page or the detail API saw them "
            f"sold) and {_plural(likely, 'likely sale')} (gone from the feed for several checks "
            "in a row, with no source able to confirm them: some may have been hidden or "
            "deleted rather than sold). "
            + (
                "Niches are ranked on both, as asked."
                if f.include_likely
                else "Niches are ranked on confirmed sales only: a likely sale counts as a "
                "listing still unsold when the feed last showed it. Include likely sales "
                "(include_likely_sales) to rank on both."
            )
        )
    if len(f.rows) == 0:
        notes.append("No listings in the window: nothing to rank.")
    elif bool(np.all(data.listings.category_id[f.rows] == NONE_CODE)):
        notes.append(
            "Categories are unknown: today's marketplace does not say a listing's category, so "
            "niches are ranked by brand, size and condition. Name the categories in the "
            "catalogue URL (catalog[]=...) to have them: each is then read as a feed of its own."
        )
    notes.append(
        f"Niches with fewer than {min_support} listings pool into (category, brand), then category."
    )
    return notes
