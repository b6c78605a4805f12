"""`analyse`: columnar evidence in, ranked niches, alerts and market flow out.

Definitions (per niche, over the window; "now" is the input's `now`):

- support: listings alive at some point in the window; supply: open now; reserved: reserved
  now; sold / deleted: sold / deleted within the window.
- sell-through = sold / (sold + supply), with a Wilson 95% interval. Recent / previous:
  sales in each half of the window over (those sales + listings open at the end of that half).
- prices: ask = current price of open listings; sold = the last price seen before the sale;
  listed (top niches only) = what every listing asked when first seen (`_listed_prices`).
  Median, quartiles (IQR), 10th and 90th percentiles, linear interpolation.
- time to sell: Kaplan-Meier over days since listing, sales are events, deleted and
  still-unsold listings are censored, with delayed entry at the moment the window first saw
  the listing. Only listings whose listing moment is known take part (`_frame.births`: a
  consistent listing date, or listed while the monitor watched); those already on sale at
  first sight with no date count everywhere else. The median (with its 95% interval) is
  shown only when at least `MIN_TIMED_SALES` such sales back it, else None with `days_note`.
- demand velocity = favourites / listing-days, listing-days = Σ max(1, days on sale).
- trend = recent-half sales / previous-half sales (None when the previous half had none).
- sales: the sales basis (`_basis`) is decided first, from the window's sales by evidence.
  `include_likely_sales` True counts likely sales (sold by absence from the feed) beside the
  confirmed ones (a source saw the listing sold), False confirmed sales only; None (the
  default) counts likely sales only when the window holds likely sales and no confirmed one
  (the marketplace refused every confirming source), else confirmed only. Left out, a
  likely-sold listing is an unsold listing censored at its last sighting (`_frame`). Both
  counts are reported either way (`counts["sold_confirmed"]`, `counts["sold_likely"]` and a
  note), and the result says which basis it used, why, in a sentence (`SalesBasisChoice`).

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

from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np

from ._basis import choose_sales_basis, sales_evidence
from ._columns import I64
from ._coverage import coverage
from ._flow import flow_days
from ._frame import Frame, build_frame
from ._input import AnalysisInput
from ._listed_prices import listed_prices
from ._measure import NicheFigures, measure
from ._niche_records import NicheKey
from ._niche_rows import niche_table
from ._result import AnalysisResult, Window
from ._summary import counts, notes
from .alerts import AlertRules, MarketRates, Tallies, find_alerts, hot_mask


def analyse(
    data: AnalysisInput,
    *,
    top_n: int = 10,
    min_support: int = 5,
    rules: AlertRules | None = None,
    generated_at: datetime | None = None,
    include_likely_sales: bool | None = None,
) -> AnalysisResult:
    """Rank the niches of `data` and find alerts. Pure and CPU-bound: no I/O, no globals.

    Runs to completion once started (there is nothing to cancel inside); callers that need
    cancellation run it in a worker thread and abandon the result. Raises ValueError on
    nonsensical arguments (top_n < 1, min_support < 1).

    The steps: which sales count (`choose_sales_basis`; `include_likely_sales` None lets
    the evidence decide), the window's listings and their niches (`build_frame`), every
    per-niche figure (`measure`), the ranking, the records built on demand (`niche_table`),
    then alerts, coverage, market flow and the result's own counts and notes.
    """
    if top_n < 1 or min_support < 1:
        raise ValueError("top_n and min_support must be at least 1")
    rules = rules or AlertRules()
    sales = choose_sales_basis(include_likely_sales, sales_evidence(data))
    f = build_frame(data, min_support=min_support, include_likely=sales.include_likely)
    m = measure(f, min_support)
    market = _market(m)
    hot = (
        hot_mask(m.sold, m.sold + m.supply, market.overall, rules)
        if f.history
        else np.zeros(f.n_niches, bool)
    )
    order, position = _rank(m)
    currency = data.listings.currencies[0] if len(data.listings.currencies) == 1 else None
    key_of = _keys(f, data)
    niches = niche_table(
        f, m, hot, order, key_of, top_n=top_n, currency=currency, market=market, rules=rules,
        listed=listed_prices(data, f, order[:top_n]),
    )  # fmt: skip
    alerts = find_alerts(data, f, _tallies(m, hot), key_of, position, market, rules, currency)
    covered = coverage(data, f)
    return AnalysisResult(
        evidence="history" if f.history else "snapshot",
        window=_window(f),
        generated_at=generated_at or datetime.now(UTC),
        niches=niches,
        alerts=tuple(alerts),
        flow=flow_days(data, f),
        counts=counts(data, f, alerts),
        notes=notes(data, f, min_support, covered, sales),
        top_n=top_n,
        min_support=min_support,
        source=data.source,
        include_likely_sales=sales.include_likely,
        sales_basis=sales,
        coverage=covered,
        currency=currency,
    )


def _rate(k: float, n: float) -> float | None:
    return float(k / n) if n > 0 else None


def _market(m: NicheFigures) -> MarketRates:
    """The whole market's sell-through over the window and in each half: what a niche is
    hot against."""
    sold, supply, recent, previous = m.sold, m.supply, m.recent, m.previous
    return MarketRates(
        overall=_rate(sold.sum(), sold.sum() + supply.sum()),
        recent=_rate(recent.sum(), recent.sum() + supply.sum()),
        previous=_rate(previous.sum(), previous.sum() + m.open_mid.sum()),
    )


def _rank(m: NicheFigures) -> tuple[I64, I64]:
    """The niches best first (`order`: niche at each rank) and each niche's rank - 1
    (`position`). Ties: more listings first, then niche number (exact before coarser, key
    order)."""
    k = len(m.score)
    order = np.lexsort((np.arange(k), -m.support, -m.score))
    position = np.empty(k, np.int64)
    position[order] = np.arange(k)
    return order, position


def _tallies(m: NicheFigures, hot: np.ndarray) -> Tallies:
    """The per-niche counts the alerts compare (`find_alerts`)."""
    return Tallies(
        sold=m.sold,
        supply=m.supply,
        recent=m.recent,
        previous=m.previous,
        supply_previous=m.open_mid,
        hot=hot,
        median_sold=m.sold_q[0],
    )


def _keys(f: Frame, data: AnalysisInput) -> Callable[[int], NicheKey]:
    """Niche i's key, built once on first use (records and alerts both ask)."""
    cache: dict[int, NicheKey] = {}

    def key_of(i: int) -> NicheKey:
        key = cache.get(i)
        if key is None:
            key = cache[i] = f.codes.key(i, data)
        return key

    return key_of


def _window(f: Frame) -> Window:
    def dt(t: float) -> datetime:
        return datetime.fromtimestamp(t, UTC)

    return Window(start=dt(f.start), end=dt(f.now), days=f.window_days, midpoint=dt(f.mid))
