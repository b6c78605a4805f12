"""Backoff: which niche each listing of an analysis window lands in (`assign_niches`).

A niche is (category, brand, size, condition) when enough listings share it; the listings of
thinner ones pool into their (category, brand), then into their category. `NicheCodes` keeps,
per niche, its key and what it pooled, so that a coarse niche can say why it is not shown finer.
Keys are ranked by counting where their span allows (`_dense`) rather than by sorting the rows:
this runs over every listing of the window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._columns import I64, NONE_CODE, ListingColumns
from ._input import AnalysisInput
from ._niche_records import NicheKey, NicheLevel

_LEVELS: tuple[NicheLevel, ...] = ("exact", "brand", "category")


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
    keys = _keys(data.listings, rows)
    niche, exact_ok, sizes = _back_off(keys, min_support)
    return niche, _describe(keys, niche, exact_ok, sizes, min_support)


@dataclass(frozen=True, eq=False)
class _Keys:
    """Per row of the window, its niche key at each level as a dense rank (in key order),
    and the codes the ranks stand for. Codes are shifted by one (0: none given)."""

    cat_codes: I64  # the distinct category ids, in order
    cat: I64  # per row: rank of its category among `cat_codes`
    brand: I64  # per row: brand code + 1
    size: I64  # per row: size code + 1
    cond: I64  # per row: condition code + 1
    pair: I64  # per row: rank of its (category, brand)
    n_pairs: int
    exact: I64  # per row: rank of its (category, brand, size, condition)
    n_exacts: int


def _keys(lst: ListingColumns, rows: I64) -> _Keys:
    """The rows' keys, ranked level by level: each level's key spans (distinct keys of the
    level above) x (one vocabulary), small enough to count rather than sort (`_dense`)."""
    cat_codes, cat = _dense(lst.category_id[rows])
    brand = lst.brand[rows].astype(np.int64) + 1
    size = lst.size[rows].astype(np.int64) + 1
    cond = lst.condition[rows].astype(np.int64) + 1
    nb, ns, nc = len(lst.brands) + 1, len(lst.sizes) + 1, len(lst.conditions) + 1
    pairs, pair = _dense(cat * nb + brand)
    _, pair_size = _dense(pair * ns + size)
    exacts, exact = _dense(pair_size * nc + cond)
    return _Keys(cat_codes, cat, brand, size, cond, pair, len(pairs), exact, len(exacts))


def _back_off(keys: _Keys, min_support: int) -> tuple[I64, np.ndarray, tuple[int, int, int]]:
    """The niche of each row (`assign_niches`), which rows stand in their exact niche, and
    how many niches stand at each level (exact, brand, category)."""
    exact_ok, exact_id, n_exact = _pass(keys.exact, keys.n_exacts, min_support, 0)
    # Most rows stand in their exact niche: gather for all, then overwrite the rest (cheaper
    # than compressing by the mask and scattering back).
    niche = exact_id[keys.exact]

    rest = np.flatnonzero(~exact_ok)
    rest_pair = keys.pair[rest]
    brand_ok, brand_id, n_brand = _pass(rest_pair, keys.n_pairs, min_support, n_exact)
    niche[rest[brand_ok]] = brand_id[rest_pair[brand_ok]]

    pooled = rest[~brand_ok]
    pooled_cat = keys.cat[pooled]
    _, cat_id, n_cat = _pass(pooled_cat, len(keys.cat_codes), 1, n_exact + n_brand)
    niche[pooled] = cat_id[pooled_cat]
    return niche, exact_ok, (n_exact, n_brand, n_cat)


def _describe(
    keys: _Keys,
    niche: I64,
    exact_ok: np.ndarray,
    sizes: tuple[int, int, int],
    min_support: int,
) -> NicheCodes:
    """Per niche (`sizes`: how many stand at each level), its key codes and, for a coarse
    niche, what it pooled (`NicheCodes`)."""
    n_exact, n_brand, n_cat = sizes
    n, n_niches = len(niche), n_exact + n_brand + n_cat
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
    finer = np.where(
        niche[coarse] < n_exact + n_brand, keys.exact[coarse], keys.pair[coarse] + keys.n_exacts
    )
    pooled, example = _pooled(niche[coarse], finer, n_niches)
    example_row = np.zeros(n_niches, np.int64)
    example_n = np.zeros(n_niches, np.int64)
    if len(coarse):
        has = example >= 0
        example_row = np.where(has, coarse[np.maximum(example, 0)], 0)
        counts = np.bincount(finer, minlength=keys.n_exacts + keys.n_pairs)
        example_n = np.where(has, counts[finer[np.maximum(example, 0)]], 0)
    brand, size, cond = keys.brand, keys.size, keys.cond
    return NicheCodes(
        level=level,
        category_id=keys.cat_codes[keys.cat[first]].astype(np.int64),
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


__all__ = ["NicheCodes", "assign_niches"]
