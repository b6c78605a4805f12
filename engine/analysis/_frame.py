"""Per-listing derived columns for one analysis: window, life times, niche assignment.

`build_frame` is the only place that decides which listings count (those alive at some
point of the window) and which niche each one lands in (backoff, see `assign_niches`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._input import (
    DELETED,
    F64,
    I8,
    I64,
    KIND_STATE,
    NONE_CODE,
    OPEN,
    RESERVED,
    SOLD,
    AnalysisInput,
)
from ._result import NicheKey, NicheLevel

DAY = 86400.0
_LEVELS: tuple[NicheLevel, ...] = ("exact", "brand", "category")


@dataclass(frozen=True, eq=False)
class Frame:
    """Columns of the listings in the window (index `rows` into the input's listings)."""

    history: bool
    now: float
    start: float  # window start (epoch seconds)
    mid: float
    obs_start: float
    window_days: float
    rows: I64
    niche: I64  # niche index per row
    codes: NicheCodes
    state: I8
    price: F64
    favourites: F64
    born: F64  # listed_at, else first_seen_at
    entered: F64  # when this window first observed it
    ended: F64  # sale/deletion time, or now
    sold: np.ndarray  # sold in the window
    open_now: np.ndarray
    open_mid: np.ndarray
    state_events: bool

    @property
    def n_niches(self) -> int:
        return len(self.codes.level)


def build_frame(data: AnalysisInput, *, min_support: int) -> Frame:
    lst, ev = data.listings, data.events
    now = data.now_epoch
    first_seen = lst.first_seen_at
    born_all = np.where(np.isnan(lst.listed_at), first_seen, np.fmin(lst.listed_at, first_seen))
    finished = (lst.state == SOLD) | (lst.state == DELETED)
    ended_all = np.where(finished, lst.state_changed_at, now)
    state_events = bool(np.any(ev.kind == KIND_STATE))
    obs_start = float(np.min(first_seen)) if len(lst) else now
    span = float(np.max(lst.last_seen_at)) - obs_start if len(lst) else 0.0
    history = state_events or bool(np.any(finished)) or span >= 3600.0

    start = obs_start
    if data.window_days is not None:
        start = max(now - data.window_days * DAY, obs_start)
    start = min(start, now)
    mid = start + (now - start) / 2.0

    in_window = (first_seen <= now) & (ended_all >= start)
    rows = np.flatnonzero(in_window).astype(np.int64)
    state = lst.state[rows]
    ended = ended_all[rows]
    seen = first_seen[rows]

    open_mid = (seen <= mid) & ~((state != OPEN) & (lst.state_changed_at[rows] <= mid))
    if state_events:
        open_mid = _open_at(data, rows, seen, mid)

    niche, codes = assign_niches(data, rows, min_support)
    return Frame(
        history=history,
        now=now,
        start=start,
        mid=mid,
        obs_start=obs_start,
        window_days=(now - start) / DAY,
        rows=rows,
        niche=niche,
        codes=codes,
        state=state,
        price=lst.price[rows],
        favourites=lst.favourites[rows],
        born=born_all[rows],
        entered=np.maximum(seen, start),
        ended=ended,
        sold=state == SOLD,
        open_now=state == OPEN,
        open_mid=open_mid,
        state_events=state_events,
    )


def _open_at(data: AnalysisInput, rows: I64, seen: F64, t: float) -> np.ndarray:
    """Was each listing open at time t? Its last state event at or before t says so;
    with none, it was open from when it was first seen (new listings start open)."""
    ev, lst = data.events, data.listings
    state_at = np.where(seen <= t, OPEN, NONE_CODE).astype(np.int8)
    ids = lst.item_id[rows]
    if len(ids) == 0:
        return state_at == OPEN
    m = (ev.kind == KIND_STATE) & (ev.at <= t)
    items, at, to = ev.item_id[m], ev.at[m], ev.to_state[m]
    sorter = np.arange(len(ids)) if np.all(ids[1:] > ids[:-1]) else np.argsort(ids)
    pos = np.minimum(np.searchsorted(ids, items, sorter=sorter), len(ids) - 1)
    row = sorter[pos]
    found = ids[row] == items
    row, at, to = row[found], at[found], to[found]
    # The last event per listing without sorting the events: the latest time per row,
    # then the events at that time (ties: the later one in input order wins).
    latest = np.full(len(ids), -np.inf)
    np.maximum.at(latest, row, at)
    last = at == latest[row]
    state_at[row[last]] = to[last]
    return state_at == OPEN


@dataclass(frozen=True, eq=False)
class NicheCodes:
    """Per niche: its level (0 exact, 1 brand, 2 category) and the codes of its key."""

    level: I64
    category_id: I64
    brand: I64
    size: I64
    condition: I64

    def key(self, i: int, data: AnalysisInput) -> NicheKey:
        lst = data.listings
        lvl = int(self.level[i])
        cid, b = int(self.category_id[i]), int(self.brand[i])
        s, c = int(self.size[i]), int(self.condition[i])
        return NicheKey(
            level=_LEVELS[lvl],
            category_id=None if cid == NONE_CODE else cid,
            brand=None if lvl == 2 or b == NONE_CODE else lst.brands[b],
            size=None if lvl != 0 or s == NONE_CODE else lst.sizes[s],
            condition=None if lvl != 0 or c == NONE_CODE else lst.conditions[c],
        )


def _runs(sorted_keys: I64) -> tuple[I64, I64]:
    """Run id per position of a sorted array, and the length of each run."""
    if len(sorted_keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    start = np.empty(len(sorted_keys), bool)
    start[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=start[1:])
    run = np.cumsum(start) - 1
    return run, np.bincount(run)


def assign_niches(data: AnalysisInput, rows: I64, min_support: int) -> tuple[I64, NicheCodes]:
    """Put each listing in the finest niche with at least `min_support` listings.

    Exact niches (category, brand, size, condition) with enough listings stand; the listings
    of sparse ones pool into their (category, brand) niche; if that pool is still sparse it
    pools into the category niche, which always stands (however small). So every listing is
    counted exactly once, and a coarse niche holds only what its finer niches could not.
    Niches are numbered exact first, then brand, then category, each in key order.
    """
    lst = data.listings
    n = len(rows)
    cat_codes, cat = np.unique(lst.category_id[rows], return_inverse=True)
    cat = cat.astype(np.int64).reshape(-1)
    brand = lst.brand[rows].astype(np.int64) + 1
    size = lst.size[rows].astype(np.int64) + 1
    cond = lst.condition[rows].astype(np.int64) + 1
    nb, ns, nc = len(lst.brands) + 1, len(lst.sizes) + 1, len(lst.conditions) + 1
    k_exact = ((cat * nb + brand) * ns + size) * nc + cond
    # One sort serves all three levels: the brand and category keys are prefixes of the
    # exact key, so the exact order is also brand order and category order.
    order = np.argsort(k_exact, kind="stable")
    ke = k_exact[order]
    run, length = _runs(ke)
    exact_ok = length[run] >= min_support
    niche_sorted = np.empty(n, np.int64)
    ok_runs = np.flatnonzero(length >= min_support)
    exact_id = np.full(len(length), -1, np.int64)
    exact_id[ok_runs] = np.arange(len(ok_runs))
    niche_sorted[exact_ok] = exact_id[run[exact_ok]]
    n_niches = len(ok_runs)

    rest = np.flatnonzero(~exact_ok)
    kb = ke[rest] // (ns * nc)
    b_run, b_len = _runs(kb)
    brand_ok = b_len[b_run] >= min_support
    b_ok_runs = np.flatnonzero(b_len >= min_support)
    brand_id = np.full(len(b_len), -1, np.int64)
    brand_id[b_ok_runs] = n_niches + np.arange(len(b_ok_runs))
    niche_sorted[rest[brand_ok]] = brand_id[b_run[brand_ok]]
    n_niches += len(b_ok_runs)

    pooled = rest[~brand_ok]
    kc = kb[~brand_ok] // nb
    c_run, c_len = _runs(kc)
    niche_sorted[pooled] = n_niches + c_run
    n_niches += len(c_len)

    niche = np.empty(n, np.int64)
    niche[order] = niche_sorted
    # Key codes per niche, from any one of its listings (all share the meaningful parts).
    first = np.full(n_niches, n, np.int64)
    np.minimum.at(first, niche, np.arange(n))
    level = np.concatenate(
        [
            np.zeros(len(ok_runs), np.int64),
            np.ones(len(b_ok_runs), np.int64),
            np.full(len(c_len), 2, np.int64),
        ]
    )
    codes = NicheCodes(
        level=level,
        category_id=cat_codes[cat[first]].astype(np.int64),
        brand=brand[first] - 1,
        size=size[first] - 1,
        condition=cond[first] - 1,
    )
    return niche, codes


__all__ = ["DAY", "RESERVED", "Frame", "assign_niches", "build_frame"]
