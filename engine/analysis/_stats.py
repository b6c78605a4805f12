"""Vectorised statistics: Wilson intervals, grouped quantiles, grouped Kaplan-Meier,
empirical-Bayes shrinkage towards a group mean.

Every function works on many groups at once (one numpy pass, no Python loop per group) and
returns NaN where a group has no data; callers turn NaN into None at the edge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._columns import F64, I64

Z95 = 1.959963984540054


def wilson(successes: F64 | I64, trials: F64 | I64, z: float = Z95) -> tuple[F64, F64]:
    """Wilson score interval for a binomial proportion, element-wise; NaN where trials == 0.

    low/high = (p + z²/2n ∓ z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n).
    """
    k = np.asarray(successes, np.float64)
    n = np.asarray(trials, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        z2 = z * z
        centre = p + z2 / (2 * n)
        spread = z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
        denom = 1 + z2 / n
        low = (centre - spread) / denom
        high = (centre + spread) / denom
    bad = n <= 0
    low = np.where(bad, np.nan, np.clip(low, 0.0, 1.0))
    high = np.where(bad, np.nan, np.clip(high, 0.0, 1.0))
    return low, high


def group_mean(values: F64, weights: F64 | I64, groups: I64) -> F64:
    """Per element: the `weights`-weighted mean of `values` over the element's group,
    ``Σ_g w·x / Σ_g w``; NaN where the group's weights sum to 0. Elements with weight 0 (and
    only those may hold NaN) take no part in their group's mean."""
    w = np.asarray(weights, np.float64)
    x = np.where(w > 0, values, 0.0)
    n = int(groups.max()) + 1 if len(groups) else 0
    num = np.bincount(groups, weights=w * x, minlength=n)
    den = np.bincount(groups, weights=w, minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return mean[groups]  # type: ignore[no-any-return]


def shrink(values: F64, weights: F64 | I64, target: F64, strength: float) -> F64:
    """Empirical-Bayes shrinkage, element-wise: ``(w·x + m·t) / (w + m)`` with m = `strength`.

    An estimate `x` backed by `w` observations is pulled towards the prior mean `t` as if the
    prior were worth `m` observations: half-way when w == m, hardly at all when w >> m. Where
    `t` is NaN (no prior) the estimate stands; where w == 0 (no estimate) the prior does.
    `strength` must be positive.
    """
    w = np.asarray(weights, np.float64)
    x = np.where(w > 0, values, 0.0)
    pooled = (w * x + strength * np.nan_to_num(target)) / (w + strength)
    return np.where(np.isnan(target), values, pooled)  # type: ignore[no-any-return]


def grouped_quantiles(
    group: I64, values: F64, n_groups: int, qs: tuple[float, ...]
) -> tuple[I64, F64]:
    """Per-group quantiles with linear interpolation (numpy's default, `statistics`'
    "inclusive" method; q=0.5 is the ordinary median). NaN values are dropped.

    Returns (counts per group, array of shape (len(qs), n_groups), NaN for empty groups).
    """
    g, v = group, values
    keep = ~np.isnan(values)
    if not keep.all():
        g, v = group[keep], values[keep]
    if len(v):
        # One float sort on (group, value) packed together is several times faster than
        # lexsort; values are read back from `v`, so packing never changes a quantile.
        # Listed group by group first (`group_order`), the packed keys are already in runs
        # that a stable sort (timsort) merges several times faster than it sorts at random.
        v = v[group_order(g, n_groups)]
        g = _sorted_groups(np.bincount(g, minlength=n_groups))  # = g in that order
        v_min, v_max = float(v.min()), float(v.max())
        packed = g * ((v_max - v_min) * 2 + 1) + (v - v_min)
        v = v[np.argsort(packed, kind="stable")]
    counts = np.bincount(g, minlength=n_groups).astype(np.int64)
    starts = np.cumsum(counts) - counts
    out = np.full((len(qs), n_groups), np.nan)
    has = counts > 0
    last = np.maximum(counts - 1, 0)
    for row, q in enumerate(qs):
        pos = q * last
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, last)
        frac = pos - lo
        lo_v = v[(starts + lo)[has]]
        hi_v = v[(starts + hi)[has]]
        out[row, has] = lo_v + frac[has] * (hi_v - lo_v)
    return counts, out


def group_order(group: I64, n_groups: int) -> I64:
    """A stable permutation listing the rows group by group (`group` in [0, n_groups)).

    A counting sort in 16-bit digits: numpy's stable argsort of uint16 keys is a radix sort,
    O(n) (~14 ms a million rows, against 50-90 ms for an argsort of the int64 groups)."""
    order: I64 | None = None
    shift = 0
    while True:
        digits = group if order is None else group[order]
        if shift:
            digits = digits >> shift
        step = np.argsort((digits & 0xFFFF).astype(np.uint16), kind="stable")
        order = step if order is None else order[step]
        shift += 16
        if (n_groups - 1) >> shift <= 0:
            return order


def _sorted_groups(sizes: I64) -> I64:
    """The group of each row once rows are listed group by group (`sizes[g]` rows each)."""
    return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)


@dataclass(frozen=True, eq=False)
class KMTable:
    """Kaplan-Meier estimates for many groups, stored flat.

    Rows `offsets[g]:offsets[g+1]` belong to group g, in increasing `time`: at each distinct
    sale time, `at_risk` listings were on sale, `events` sold, and `survival` is the share
    still unsold just after it. `median[g]` is the first time survival <= 0.5 (NaN: never).
    `median_low` / `median_high` bound it at 95% (Brookmeyer-Crowley: the first times the
    upper and lower pointwise bands of the curve, Greenwood's variance on the log-log scale,
    fall to 0.5; NaN: the band never does, the bound is open).
    """

    offsets: I64
    time: F64
    at_risk: F64
    events: F64
    survival: F64
    median: F64
    median_low: F64
    median_high: F64

    def curve(self, g: int) -> tuple[F64, F64, F64, F64]:
        a, b = int(self.offsets[g]), int(self.offsets[g + 1])
        return self.time[a:b], self.survival[a:b], self.at_risk[a:b], self.events[a:b]


def kaplan_meier(group: I64, entry: F64, exit: F64, sold: np.ndarray, n_groups: int) -> KMTable:
    """Grouped Kaplan-Meier with delayed entry (left truncation).

    A listing is at risk at time t (days since it was listed) when entry < t <= exit: `entry`
    is its age when we first saw it (0 when we saw it listed), `exit` its age at sale (`sold`)
    or when it was censored (deleted, or still unsold now). Without delayed entry a listing
    that was already 20 days old when a monitor started would count as "at risk and unsold"
    for days 0-20, which we never observed, and would bias the curve towards slow sales.
    Rows with exit <= entry carry no observation and are dropped.
    """
    keep = exit > entry
    group, entry, exit, sold = group[keep], entry[keep], exit[keep], sold[keep]
    if len(group) == 0:
        return _empty_km(n_groups)
    steps = _risk_sets(group, entry, exit, sold, n_groups)
    if steps is None:
        return _empty_km(n_groups)
    ev_group, time, n, d = steps
    counts = np.bincount(ev_group, minlength=n_groups).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    row_start = offsets[ev_group]
    starts = offsets[:-1][counts > 0]
    survival = _survival(n, d, starts, row_start)
    # Greenwood: Var(log S) = sum d / (n (n - d)). Once a group's curve reaches 0 its band
    # is 0 there too; the term is infinite exactly then, so it is left out of the sum.
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(n > d, d / (n * (n - d)), 0.0)
    var, var_before = _cumsum_per_group(terms, starts, row_start)
    var = np.maximum(var - var_before, 0.0)
    band_low, band_high = _loglog_band(survival, var)

    def first_below_half(curve: F64) -> F64:
        out = np.full(n_groups, np.nan)
        reached = np.flatnonzero(curve <= 0.5 + 1e-12)
        if len(reached):
            g_reached, first_idx = np.unique(ev_group[reached], return_index=True)
            out[g_reached] = time[reached[first_idx]]
        return out

    return KMTable(
        offsets,
        time,
        n,
        d,
        survival,
        first_below_half(survival),
        first_below_half(band_low),
        first_below_half(band_high),
    )


def _risk_sets(
    group: I64, entry: F64, exit: F64, sold: np.ndarray, n_groups: int
) -> tuple[I64, F64, F64, F64] | None:
    """The distinct sale times of every group, listed group by group in increasing time:
    the group of each, the time, how many listings were at risk then (`n`) and how many sold
    (`d`). None when nothing sold. All groups are counted at once: one sortable float per
    (group, time) lets a single searchsorted answer "how many in this group entered / left
    before t" for every group."""
    span = float(np.max(exit)) + 2.0
    base = group.astype(np.float64) * span
    # Rows listed group by group: the sorts below sort (group, time) keys, which are then
    # in runs that a stable sort (timsort) merges ~3x faster than it sorts keys at random.
    # Only speed depends on this order: a sorted array is the same whichever way it came.
    by_group = group_order(group, n_groups)
    entry_keys = np.sort((base + entry)[by_group], kind="stable")
    exit_all = (base + exit)[by_group]
    sold = sold[by_group]
    sizes = np.bincount(group, minlength=n_groups)
    group = _sorted_groups(sizes)  # = group[by_group]
    # By index, not by mask: numpy gathers faster than it compresses by a random mask.
    sales, censored = np.flatnonzero(sold), np.flatnonzero(~sold)
    ev_keys = np.sort(exit_all[sales], kind="stable")
    if len(ev_keys) == 0:
        return None
    # Exits are the sales (`ev_keys`, sorted anyway) and the censored rows: sorting only the
    # latter is cheaper than sorting every exit again, and counts the same.
    censored_keys = np.sort(exit_all[censored], kind="stable")
    boundary = np.empty(len(ev_keys), bool)
    boundary[0] = True
    np.not_equal(ev_keys[1:], ev_keys[:-1], out=boundary[1:])
    first = np.flatnonzero(boundary)
    keys = ev_keys[first]
    d = np.empty(len(first), np.float64)  # run lengths: sales at each distinct key
    np.subtract(first[1:], first[:-1], out=d[:-1])
    d[-1] = len(ev_keys) - first[-1]
    # Sales sort by group first: the group of each is known from the counts, no division.
    per_group = np.bincount(group[sales], minlength=n_groups)
    ev_group = _sorted_groups(per_group)[first]
    group_base = ev_group.astype(np.float64) * span
    time = keys - group_base
    # Keys sort by group first, so a group's rows start where the smaller groups end.
    group_start = np.concatenate(([0], np.cumsum(sizes)))
    before = group_start[ev_group]
    entered = np.searchsorted(entry_keys, keys, "left") - before
    # Sales before a key: `first` (keys are the first of each run of equal sale keys).
    left = np.searchsorted(censored_keys, keys, "left") + first - before
    n = np.maximum((entered - left).astype(np.float64), d)
    return ev_group, time, n, d


def _survival(n: F64, d: F64, starts: I64, row_start: I64) -> F64:
    """Each group's curve: the running product of (1 - d / n), as a sum of logs per group
    (`_cumsum_per_group`); 0 from a step where everyone at risk sold."""
    factor = 1.0 - d / n
    zero = factor <= 0.0
    with np.errstate(divide="ignore"):
        logs = np.where(zero, 0.0, np.log(np.where(zero, 1.0, factor)))
    cum, cum_before = _cumsum_per_group(logs, starts, row_start)
    zeros = np.cumsum(zero)
    zeros_before = np.concatenate(([0], zeros))[row_start]
    return np.where(zeros - zeros_before > 0, 0.0, np.exp(cum - cum_before))


def _loglog_band(survival: F64, var_log: F64, z: float = Z95) -> tuple[F64, F64]:
    """Pointwise 95% band of a survival curve on the log-log scale (it stays in [0, 1]):
    S ** exp(±z·se), se = sqrt(Var(log S)) / |log S|. At S == 1 the band is the point 1, at
    S == 0 the point 0."""
    inside = (survival > 0.0) & (survival < 1.0)
    s = np.where(inside, survival, 0.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(var_log) / np.abs(np.log(s))
    # S < 1, so a larger power lowers it: exp(+z·se) gives the lower band.
    low = np.where(inside, s ** np.exp(z * se), survival)
    high = np.where(inside, s ** np.exp(-z * se), survival)
    return low, high


def _cumsum_per_group(values: F64, starts: I64, row_start: I64) -> tuple[F64, F64]:
    """A running sum that restarts at every group of consecutive rows (`starts`: the first
    row of each group, increasing; `row_start[j]`: the first row of row j's group). Returns
    (sums, base): the group's running sum at row j is ``sums[j] - base[j]``.

    One global cumsum would do, but its values grow with every group before (tens of
    thousands of log factors), so subtracting two of them loses the last digits: a survival
    of exactly 0.5 (5 of 10 sold) came out up to 7e-11 above it and missed the median. Each
    group's first row therefore also takes away the previous group's total, so the running
    sum stays near zero between groups and keeps the precision of the group's own figures.
    """
    adjusted = values.copy()
    if len(starts) > 1:
        totals = np.add.reduceat(values, starts)
        adjusted[starts[1:]] -= totals[:-1]
    sums = np.cumsum(adjusted)
    base = sums[row_start] - values[row_start]
    return sums, base


def _empty_km(n_groups: int) -> KMTable:
    empty = np.zeros(0, np.float64)
    nan = np.full(n_groups, np.nan)
    return KMTable(np.zeros(n_groups + 1, np.int64), empty, empty, empty, empty, nan, nan, nan)
