"""What the top niches' listings asked when they were first seen (`NicheStats.listed_price`).

The asking price of a niche (`ask_price`) is what its open listings ask now, so a niche that
sold out has none, and those are the niches a reseller most wants to price: the price bands
showed no asking band for any top niche of a month in which every listing sold. What each
listing asked at its first sighting (the price its `new` event recorded; its last known
price when the evidence has no such event, as a snapshot or an old export) exists for every
listing, open, sold or deleted, so it compares what sellers asked with what buyers paid.

Computed for the top niches only (the graphs show no others), in one grouped pass.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._columns import F64, I64, KIND_NEW
from ._frame import Frame, _rows_of
from ._input import AnalysisInput
from ._measure import QS
from ._niche_records import PriceSummary
from ._stats import grouped_quantiles


def first_prices(data: AnalysisInput, rows: I64) -> F64:
    """Per listing `rows` (indices into `data.listings`), the price its first `new` event
    recorded, else its last known price (NaN: never priced)."""
    lst, ev = data.listings, data.events
    prices = lst.price[rows].astype(np.float64, copy=True)
    pick = np.flatnonzero((ev.kind == KIND_NEW) & ~np.isnan(ev.price))
    if len(pick) == 0 or len(rows) == 0:
        return prices
    ids, items = lst.item_id[rows], ev.item_id[pick]
    row = _rows_of(ids, items)
    found = np.flatnonzero(ids[row] == items)  # events of listings outside `rows` drop out
    row, pick = row[found], pick[found]
    # The earliest `new` event of each listing (a listing seen new twice keeps the first).
    order = np.lexsort((ev.at[pick], row))
    row, pick = row[order], pick[order]
    first = np.ones(len(row), bool)
    first[1:] = row[1:] != row[:-1]
    prices[row[first]] = ev.price[pick[first]]
    return prices


def listed_prices(data: AnalysisInput, f: Frame, niches: I64) -> Mapping[int, PriceSummary]:
    """Frame niche index -> the quantiles of what its listings asked when first seen, for
    each of `niches`."""
    if len(niches) == 0:
        return {}
    mine = np.flatnonzero(np.isin(f.niche, niches))
    n, q = grouped_quantiles(f.niche[mine], first_prices(data, f.rows[mine]), f.n_niches, QS)

    def at(j: int, i: int) -> float | None:
        value = float(q[j][i])
        return None if np.isnan(value) else value

    return {
        int(i): PriceSummary(int(n[i]), at(0, i), at(1, i), at(2, i), at(3, i), at(4, i))
        for i in niches.tolist()
    }


__all__ = ["first_prices", "listed_prices"]
