"""Per-listing derived columns for one analysis: window, life times, niche assignment.

`build_frame` is the only place that decides which listings count (those alive at some
point of the window) and which niche each one lands in (backoff: `_niches.assign_niches`).

Likely sales (sold by absence from the feed, no source confirming them) are sales only when
the analysis includes them (its sales basis, `_basis`: asked for, or chosen because no source
confirmed a sale in the window). Otherwise a likely-sold listing is an unsold (open) listing
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

from ._columns import DELETED, F64, I8, I64, KIND_STATE, NONE_CODE, OPEN, RESERVED, SOLD
from ._input import AnalysisInput
from ._niches import NicheCodes, assign_niches

DAY = 86400.0
# A listing date may run this far past the first sighting (clocks and stamps disagree a little).
LISTED_SLACK = 120.0
# After a gap of more than MAX_GAP_POLLS typical poll intervals (and at least MIN_GAP), a
# listing that appeared in the gap was listed at an unknown moment of it.
MAX_GAP_POLLS = 4.0
MIN_GAP = 2 * 3600.0
MAX_LISTING_AGE = 5 * 365 * DAY  # an older "listing date" is a wrong one


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
    """The columns of `data`'s window: which listings count, their lives and their niches
    (module doc). Pure and vectorised: no Python work per listing."""
    lst, ev = data.listings, data.events
    now = data.now_epoch
    first_seen = lst.first_seen_at
    obs_start = _observed_from(data)
    born_all, known_all = births(data, obs_start)
    assert ev.likely is not None  # filled in by the columns
    likely_all, state_all, finished, ended_all = _lives(data, include_likely)
    skip_likely_events = not include_likely and bool(ev.likely.any())
    state_events = bool(np.any(ev.kind == KIND_STATE))
    span = float(np.max(lst.last_seen_at)) - obs_start if len(lst) else 0.0
    history = state_events or bool(np.any(finished)) or span >= 3600.0
    start, mid = _bounds(data, obs_start)

    in_window = (first_seen <= now) & (ended_all >= start)
    rows = np.flatnonzero(in_window).astype(np.int64)
    state = state_all[rows]
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
        ended=ended_all[rows],
        sold=state == SOLD,
        open_now=state == OPEN,
        open_mid=open_mid,
        state_events=state_events,
        likely=likely_all[rows],
        include_likely=include_likely,
        skip_likely_events=skip_likely_events,
    )


def _lives(data: AnalysisInput, include_likely: bool) -> tuple[np.ndarray, I8, np.ndarray, F64]:
    """Per listing (all of them, not only the window's): is it a likely sale, its state as
    the analysis counts it, has that state ended its life on sale, and when did that life
    end (now while it lasts). A likely sale left out is an open listing censored at its last
    sighting (module doc): state open, life ended when the feed last showed it."""
    lst, now = data.listings, data.now_epoch
    assert lst.likely is not None  # filled in by the columns
    likely = lst.likely & (lst.state == SOLD)
    state, censor = lst.state, not include_likely and bool(likely.any())
    if censor:
        state = np.where(likely, np.int8(OPEN), state).astype(np.int8)
    finished = (state == SOLD) | (state == DELETED)
    ended = np.where(finished, lst.state_changed_at, now)
    if censor:
        ended = np.where(likely, np.fmin(lst.last_seen_at, now), ended)
    return likely, state, finished, ended


def _observed_from(data: AnalysisInput) -> float:
    """When the evidence first looked (its first sighting; now without any listing)."""
    lst = data.listings
    return float(np.min(lst.first_seen_at)) if len(lst) else data.now_epoch


def window_start(data: AnalysisInput) -> float:
    """Where `build_frame`'s window starts (epoch seconds), for what is decided before it
    (which sales count, `_basis`)."""
    return _bounds(data, _observed_from(data))[0]


def _bounds(data: AnalysisInput, obs_start: float) -> tuple[float, float]:
    """The window's start and midpoint: `window_days` back from now, but never before the
    first observation (nothing was seen earlier) nor after now."""
    now = data.now_epoch
    start = obs_start
    if data.window_days is not None:
        start = max(now - data.window_days * DAY, obs_start)
    start = min(start, now)
    return start, start + (now - start) / 2.0


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


__all__ = ["DAY", "RESERVED", "Frame", "assign_niches", "build_frame", "window_start"]
