"""Per-listing derived columns for one analysis: window, life times, niche assignment.

`build_frame` is the only place that decides which listings count (those alive at some
point of the window) and which niche each one lands in (backoff, see `assign_niches`).

Likely sales (sold by absence from the feed, no source confirming them) are sales only when
the analysis includes them. Otherwise a likely-sold listing is an unsold (open) listing
censored at its last sighting: its life on sale ends when the feed last showed it, and the
state events established by absence are left out of the states at the window's midpoint.

When was a listing listed (`born`), and is its age known (`age_known`)? Today's marketplace
no longer says, so the monitor's own sightings decide (`births`):

- a listing date the source gave is used when it agrees with what was observed: not after
  the listing was first seen, and not before the poll prior to its first sighting when it
  appeared while watched (a listing new since the last poll was listed since that poll);
- a listing first seen after the monitor's first poll appeared while watched: it was listed
  between the poll before and the one that saw it (the midpoint; the previous poll unknown,
  at first sight). After a long gap (`MAX_GAP_POLLS` intervals, at least `MIN_GAP` hours) the
  moment is too uncertain and its age is unknown;
- a listing already on sale at the first poll, with no usable date, has an unknown age.

Listings of unknown age count in supply, sales and sell-through but not in time to sell: they
would enter the survival curve as if listed when first seen, making a niche whose listings
were first seen mid-life read as fast-selling (left truncation with an unknown entry age).
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
# A listing date may run this far past the first sighting (clocks and stamps disagree a little).
LISTED_SLACK = 120.0
# After a gap of more than MAX_GAP_POLLS typical poll intervals (and at least MIN_GAP), a
# listing that appeared in the gap was listed at an unknown moment of it.
MAX_GAP_POLLS = 4.0
MIN_GAP = 2 * 3600.0
MAX_LISTING_AGE = 5 * 365 * DAY  # an older "listing date" is a wrong one
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
    born: F64  # when it was listed, as well as known (`births`); first_seen_at if unknown
    age_known: np.ndarray  # its listing moment is known (`births`): it enters time to sell
    entered: F64  # when this window first observed it
    ended: F64  # sale/deletion time, or now
    sold: np.ndarray  # sold in the window (likely sales only when included)
    open_now: np.ndarray
    open_mid: np.ndarray
    state_events: bool
    likely: np.ndarray  # a likely sale (sold by absence), whether included or not
    include_likely: bool
    skip_likely_events: bool  # state events established by absence are left out

    @property
    def n_niches(self) -> int:
        return len(self.codes.level)


def build_frame(data: AnalysisInput, *, min_support: int, include_likely: bool = False) -> Frame:
    lst, ev = data.listings, data.events
    now = data.now_epoch
    first_seen = lst.first_seen_at
    obs_start = float(np.min(first_seen)) if len(lst) else now
    born_all, known_all = births(data, obs_start)
    assert lst.likely is not None and ev.likely is not None  # filled in by the columns
    likely_all = lst.likely & (lst.state == SOLD)
    state_all, censor = lst.state, not include_likely and bool(likely_all.any())
    if censor:
        state_all = np.where(likely_all, np.int8(OPEN), state_all).astype(np.int8)
    finished = (state_all == SOLD) | (state_all == DELETED)
    ended_all = np.where(finished, lst.state_changed_at, now)
    if censor:
        ended_all = np.where(likely_all, np.fmin(lst.last_seen_at, now), ended_all)
    skip_likely_events = not include_likely and bool(ev.likely.any())
    state_events = bool(np.any(ev.kind == KIND_STATE))
    span = float(np.max(lst.last_seen_at)) - obs_start if len(lst) else 0.0
    history = state_events or bool(np.any(finished)) or span >= 3600.0

    start = obs_start
    if data.window_days is not None:
        start = max(now - data.window_days * DAY, obs_start)
    start = min(start, now)
    mid = start + (now - start) / 2.0

    in_window = (first_seen <= now) & (ended_all >= start)
    rows = np.flatnonzero(in_window).astype(np.int64)
    state = state_all[rows]
    ended = ended_all[rows]
    seen = first_seen[rows]

    if state_events:
        open_mid = _open_at(data, rows, seen, mid, skip_likely_events)
    else:
        open_mid = (seen <= mid) & ~((state != OPEN) & (lst.state_changed_at[rows] <= mid))

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
        age_known=known_all[rows],
        entered=np.maximum(seen, start),
        ended=ended,
        sold=state == SOLD,
        open_now=state == OPEN,
        open_mid=open_mid,
        state_events=state_events,
        likely=likely_all[rows],
        include_likely=include_likely,
        skip_likely_events=skip_likely_events,
    )


def births(data: AnalysisInput, obs_start: float) -> tuple[F64, np.ndarray]:
    """Per listing: when it was listed, and whether that is known (module doc). Unknown
    births are reported as the first sighting (what velocity and flow use)."""
    lst = data.listings
    first_seen, listed = lst.first_seen_at, lst.listed_at
    watched = first_seen > obs_start + 1.0  # appeared after the monitor's first poll
    ok = np.array([p.at for p in data.polls if p.ok], np.float64)
    if len(ok):
        # The last good poll before the one that saw it (a poll stamps what it sees at its
        # own time, so "before" means at least a second earlier).
        before = np.searchsorted(ok, first_seen - 1.0, side="right") - 1
        previous = np.where(before >= 0, ok[np.maximum(before, 0)], np.nan)
        steps = np.diff(ok)
        typical = float(np.median(steps)) if len(steps) else 0.0
        limit = max(MAX_GAP_POLLS * typical, MIN_GAP)
        gap = first_seen - previous
        since = np.where(np.isnan(previous), first_seen, first_seen - gap / 2)
        seen_new = watched & ~np.isnan(previous) & (gap <= limit)
    else:  # no poll record (a scrape, an old export): first sight is the best we have
        previous = np.full(len(first_seen), np.nan)
        since, seen_new = first_seen, watched
    with np.errstate(invalid="ignore"):
        usable = (
            ~np.isnan(listed)
            & (listed <= first_seen + LISTED_SLACK)
            & (listed > first_seen - MAX_LISTING_AGE)
            & (~watched | np.isnan(previous) | (listed >= previous - LISTED_SLACK))
        )
    born = np.where(usable, np.fmin(listed, first_seen), np.where(seen_new, since, first_seen))
    return born, usable | seen_new


def _open_at(
    data: AnalysisInput, rows: I64, seen: F64, t: float, skip_likely: bool = False
) -> np.ndarray:
    """Was each listing open at time t? Its last state event at or before t says so;
    with none, it was open from when it was first seen (new listings start open).
    `skip_likely` leaves out the events established by absence (likely changes)."""
    ev, lst = data.events, data.listings
    state_at = np.where(seen <= t, OPEN, NONE_CODE).astype(np.int8)
    ids = lst.item_id[rows]
    if len(ids) == 0:
        return state_at == OPEN
    # Gather by index rather than by boolean mask: numpy compresses by an unpredictable
    # mask about 3x slower than it finds the indices and gathers (10 ms a column here).
    chosen = (ev.kind == KIND_STATE) & (ev.at <= t)
    if skip_likely:
        assert ev.likely is not None
        chosen &= ~ev.likely
    pick = np.flatnonzero(chosen)
    items, at, to = ev.item_id[pick], ev.at[pick], ev.to_state[pick]
    row = _rows_of(ids, items)
    found = ids[row] == items
    if not found.all():  # events of listings outside the window
        keep = np.flatnonzero(found)
        row, at, to = row[keep], at[keep], to[keep]
    # The last event per listing without sorting the events: the latest time per row,
    # then the events at that time (ties: the later one in input order wins).
    latest = _latest(row, at, len(ids))
    last = np.flatnonzero(at == latest[row])
    state_at[row[last]] = to[last]
    return state_at == OPEN


def _rows_of(ids: I64, items: I64) -> I64:
    """For each of `items`, a row of `ids` holding it if any (the caller checks the match).
    Sorted ids (the common case) are searched directly: a `sorter` costs an indirection per
    probe, about half the time again over millions of events."""
    if np.all(ids[1:] > ids[:-1]):
        return np.minimum(np.searchsorted(ids, items), len(ids) - 1)  # type: ignore[no-any-return]
    sorter = np.argsort(ids)
    pos = np.minimum(np.searchsorted(ids[sorter], items), len(ids) - 1)
    return sorter[pos]  # type: ignore[no-any-return]


def _latest(row: I64, at: F64, n: int) -> F64:
    """Per row, the largest of its `at` (-inf: none). Positive timestamps are reduced as
    their int64 bit patterns, which order exactly like the floats (and compare equal only
    when they are equal). Why: `np.maximum.at` on float64 ran 15-25x slower than on int64
    over the bench's event times (75 ms vs 3-5 ms for 1.7M events, numpy 2.4)."""
    if len(at) and float(at.min()) > 0.0:
        bits = np.full(n, np.iinfo(np.int64).min, np.int64)
        np.maximum.at(bits, row, at.view(np.int64))
        latest = bits.view(np.float64)
        latest[bits == np.iinfo(np.int64).min] = -np.inf
        return latest  # type: ignore[no-any-return]
    latest = np.full(n, -np.inf)
    np.maximum.at(latest, row, at)
    return latest  # type: ignore[no-any-return]


@dataclass(frozen=True, eq=False)
class NicheCodes:
    """Per niche: its level (0 exact, 1 brand, 2 category) and the codes of its key; for a
    coarse niche, what it pooled: how many finer keys (`pooled`) and the largest of them
    (`example_*` codes, `example_n` listings), to say why it is not shown finer."""

    level: I64
    category_id: I64
    brand: I64
    size: I64
    condition: I64
    pooled: I64
    example_brand: I64
    example_size: I64
    example_condition: I64
    example_n: I64
    min_support: int = 1

    def key(self, i: int, data: AnalysisInput) -> NicheKey:
        lst = data.listings
        lvl = int(self.level[i])
        cid, b = int(self.category_id[i]), int(self.brand[i])
        s, c = int(self.size[i]), int(self.condition[i])
        category_id = None if cid == NONE_CODE else cid
        return NicheKey(
            level=_LEVELS[lvl],
            category_id=category_id,
            brand=None if lvl == 2 or b == NONE_CODE else lst.brands[b],
            size=None if lvl != 0 or s == NONE_CODE else lst.sizes[s],
            condition=None if lvl != 0 or c == NONE_CODE else lst.conditions[c],
            category_name=None if category_id is None else data.category_names.get(category_id),
            backoff=self._backoff(i, data),
        )

    def _backoff(self, i: int, data: AnalysisInput) -> str | None:
        lvl, pooled = int(self.level[i]), int(self.pooled[i])
        if lvl == 0 or pooled == 0:
            return None
        lst, m, n = data.listings, self.min_support, int(self.example_n[i])
        few = f"fewer than {m} listings" if m > 1 else "too few listings"
        if lvl == 1:
            s, c = int(self.example_size[i]), int(self.example_condition[i])
            size = f"size {lst.sizes[s]}" if s != NONE_CODE else "no size"
            cond = lst.conditions[c] if c != NONE_CODE else "no condition"
            what = "size and condition" if pooled == 1 else f"{pooled} sizes and conditions"
            return (
                f"{what} with {few} each (largest: {size} · {cond}, {_plural(n, 'listing')}): "
                "shown together at brand level"
            )
        b = int(self.example_brand[i])
        brand = lst.brands[b] if b != NONE_CODE else "no brand"
        what = "brand" if pooled == 1 else f"{pooled} brands"
        return (
            f"{what} with {few} each in this category (largest: {brand}, "
            f"{_plural(n, 'listing')}): shown together at category level"
        )


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


# Keys spanning at most this many values per row (or `_COUNT_MIN_SPAN`) are counted with
# bincount rather than sorted: O(n + span) instead of O(n log n).
_COUNT_SPAN_PER_ROW = 4
_COUNT_MIN_SPAN = 1 << 16


def _dense(keys: I64) -> tuple[I64, I64]:
    """``np.unique(keys, return_inverse=True)``: the distinct keys in increasing order and
    the index of each key among them. Keys over a small span (codes from small
    vocabularies) are counted instead of sorted: ~10 ms rather than ~90 ms a million rows."""
    if len(keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo, hi = int(keys.min()), int(keys.max())
    if hi - lo > _COUNT_SPAN_PER_ROW * len(keys) + _COUNT_MIN_SPAN:
        distinct, inverse = np.unique(keys, return_inverse=True)
        return distinct.astype(np.int64), inverse.reshape(-1).astype(np.int64)
    shifted = keys - lo
    present = np.bincount(shifted) > 0
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present) + lo, rank[shifted]


def _pass(key: I64, n_keys: int, min_support: int, first_id: int) -> tuple[np.ndarray, I64, int]:
    """Which rows' `key` (dense, < n_keys) has at least `min_support` rows; the niche id of
    each such key, numbered from `first_id` in key order; how many keys stand."""
    stands = np.bincount(key, minlength=n_keys) >= min_support
    ids = first_id + np.cumsum(stands) - 1
    return stands[key], ids, int(np.count_nonzero(stands))


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
    cat_codes, cat = _dense(lst.category_id[rows])
    brand = lst.brand[rows].astype(np.int64) + 1
    size = lst.size[rows].astype(np.int64) + 1
    cond = lst.condition[rows].astype(np.int64) + 1
    nb, ns, nc = len(lst.brands) + 1, len(lst.sizes) + 1, len(lst.conditions) + 1
    # Dense ranks level by level, in key order: each level's key spans (distinct keys of the
    # level above) x (one vocabulary), small enough to count rather than sort.
    pairs, pair = _dense(cat * nb + brand)
    _, pair_size = _dense(pair * ns + size)
    exacts, exact = _dense(pair_size * nc + cond)

    exact_ok, exact_id, n_exact = _pass(exact, len(exacts), min_support, 0)
    # Most rows stand in their exact niche: gather for all, then overwrite the rest (cheaper
    # than compressing by the mask and scattering back).
    niche = exact_id[exact]

    rest = np.flatnonzero(~exact_ok)
    rest_pair = pair[rest]
    brand_ok, brand_id, n_brand = _pass(rest_pair, len(pairs), min_support, n_exact)
    niche[rest[brand_ok]] = brand_id[rest_pair[brand_ok]]

    pooled = rest[~brand_ok]
    pooled_cat = cat[pooled]
    _, cat_id, n_cat = _pass(pooled_cat, len(cat_codes), 1, n_exact + n_brand)
    niche[pooled] = cat_id[pooled_cat]
    n_niches = n_exact + n_brand + n_cat
    # Key codes per niche, from any one of its listings (all share the meaningful parts).
    first = np.full(n_niches, n, np.int64)
    np.minimum.at(first, niche, np.arange(n))
    level = np.concatenate(
        [
            np.zeros(n_exact, np.int64),
            np.ones(n_brand, np.int64),
            np.full(n_cat, 2, np.int64),
        ]
    )
    coarse = np.flatnonzero(~exact_ok)
    # What each coarse niche pooled: its distinct finer keys (exact keys for a brand-level
    # niche, (category, brand) pairs for a category-level one) and the largest of them.
    finer = np.where(niche[coarse] < n_exact + n_brand, exact[coarse], pair[coarse] + len(exacts))
    pooled, example = _pooled(niche[coarse], finer, n_niches)
    example_row = np.zeros(n_niches, np.int64)
    example_n = np.zeros(n_niches, np.int64)
    if len(coarse):
        has = example >= 0
        example_row = np.where(has, coarse[np.maximum(example, 0)], 0)
        sizes = np.bincount(finer, minlength=len(exacts) + len(pairs))
        example_n = np.where(has, sizes[finer[np.maximum(example, 0)]], 0)
    codes = NicheCodes(
        level=level,
        category_id=cat_codes[cat[first]].astype(np.int64),
        brand=brand[first] - 1,
        size=size[first] - 1,
        condition=cond[first] - 1,
        pooled=pooled,
        example_brand=brand[example_row] - 1,
        example_size=size[example_row] - 1,
        example_condition=cond[example_row] - 1,
        example_n=example_n,
        min_support=min_support,
    )
    return niche, codes


def _pooled(niche: I64, finer: I64, n_niches: int) -> tuple[I64, I64]:
    """Per niche, how many distinct `finer` keys its rows carry, and the index (into these
    rows) of one row of the most common one (-1: none). Every row of a finer key lands in the
    same niche (backoff decides by key), so keys are counted, never sorted with the rows."""
    pooled = np.zeros(n_niches, np.int64)
    example = np.full(n_niches, -1, np.int64)
    if len(niche) == 0:
        return pooled, example
    sizes = np.bincount(finer)
    keys = np.flatnonzero(sizes)
    key_row = np.zeros(len(sizes), np.int64)
    key_row[finer] = np.arange(len(finer))  # any one row of each key
    key_niche = niche[key_row[keys]]
    pooled += np.bincount(key_niche, minlength=n_niches)
    # Largest key per niche: order the keys by (niche, size) and take each niche's last.
    order = np.lexsort((sizes[keys], key_niche))
    last = np.flatnonzero(np.r_[key_niche[order][1:] != key_niche[order][:-1], True])
    best = keys[order[last]]
    example[niche[key_row[best]]] = key_row[best]
    return pooled, example
    pairs, first_row, counts = np.unique(
        niche * (int(finer.max()) + 1) + finer, return_index=True, return_counts=True
    )
    pair_niche = pairs // (int(finer.max()) + 1)
    pooled += np.bincount(pair_niche, minlength=n_niches)
    # Largest key per niche: sort by (niche, count) and take each niche's last.
    order = np.lexsort((counts, pair_niche))
    last = np.flatnonzero(np.r_[pair_niche[order][1:] != pair_niche[order][:-1], True])
    best = order[last]
    example[pair_niche[best]] = first_row[best]
    return pooled, example


__all__ = ["DAY", "RESERVED", "Frame", "assign_niches", "build_frame"]
