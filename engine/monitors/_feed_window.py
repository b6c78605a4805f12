"""Which live listings missing from a poll's feed left the feed's window, decided from the feed's
own order (what the monitor saw, and when), never from ids. Pure: no I/O, no clock.

Why not ids: the marketplace allots an id when a draft is made, not when the listing is
published, so a newest-first feed shows listings published now with ids days older than their
neighbours (MARKETPLACE.md, "Since 13 September 2026"). A window bounded by its lowest id
misreads it both ways: a late-published draft at the bottom drags the bound down and turns
listings that merely slid out of sight into drop-outs (in absence mode, likely sales of
listings still for sale), and a draft near the top that sold is taken for one out of sight.

The rule. A newest-first feed is ordered by publication; read up to the page cap, it shows its
newest listings, the window, and the window ends at its last organic listing, the boundary
(promoted listings are placed out of date order: they are never the boundary and never move
it). A live listing missing from a feed read to its end has left it. A live listing missing
from a cut feed has left the window iff it was published after the boundary: it would have
been shown above it. Published before, it may only have slid out of sight below the cut, and
its absence proves nothing. A listing of several-category URLs is judged against the window of
its own category (each category is a feed of its own, and where a busy category's window ends
says nothing of a quiet one's); one whose category matches none has left only if it left
every window.

Publication order, from what the monitor saw. Each listing gets a rank at its first organic
sighting (`listings.feed_rank`, higher is newer), placed among the ranks of the listings shown
around it in that same feed (`place`):

- a run of unranked listings above every ranked one of its feed was published since the
  monitor last looked: it goes above every rank the monitor holds;
- a run between two ranked listings goes evenly between their ranks;
- a run below every ranked one of its feed slid into view from below (listings of the window
  sold, and the window reached further back): it was below every window that showed the
  monitor's ranked listings while it was on sale (else it would have been seen), so it goes
  below every rank the monitor holds.

Ranks the feed contradicts give way: of a feed's ranked listings, the longest run whose ranks
agree with the feed's order keeps them, and the others are placed again like new ones, so what
a feed shows is always the truth about the order of what it shows. That mends a guess gone
wrong (a listing hidden while reserved, then shown again, placed by where it reappeared).

What this cannot see: a listing hidden (reserved) through every poll that showed an older
neighbour, shown again exactly at the window's end while that neighbour is just beyond it, is
placed below the neighbour, and the neighbour is taken for a drop-out for as long as the
window ends there. Absence needs several polls in a row (`ConfirmPolicy.absence_polls`), and
a drop-out is asked about before anything is recorded. A listing with no rank (only ever seen
promoted, or last seen before ranks existed) is never taken to have left a cut window:
nothing says where it stands.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from store import FeedOrder

from ..market import Feed, FeedWindow

# Between ranks placed in a row: room for about twenty placements nested into one gap (a gap
# with no room left gives ties, which never count as newer: see `_between`).
GAP = 1 << 20


def windows_of(feed: Feed) -> tuple[FeedWindow, ...]:
    """The feed's windows. A feed that states none (a marketplace that always reads its feed
    to the end) is one window, read to its end, in its organic listings' order."""
    if feed.windows:
        return feed.windows
    organic = tuple(seen.item_id for seen in feed.listings if not seen.promoted)
    return (FeedWindow(organic, cut=False),)


def place(windows: Sequence[FeedWindow], order: FeedOrder) -> dict[int, int]:
    """The ranks this poll gives: to each organic listing of `windows` that has none, and to
    each whose rank its feed contradicts (see the module's doc). Windows are taken in turn,
    each seeing the ranks the ones before it gave."""
    ranks = dict(order.ranks)
    low, high = order.lowest, order.highest
    placed: dict[int, int] = {}
    for window in windows:
        shown = list(dict.fromkeys(window.organic))
        kept = _agreeing(shown, ranks)
        start = 0
        while start < len(shown):
            if shown[start] in kept:
                start += 1
                continue
            end = start
            while end < len(shown) and shown[end] not in kept:
                end += 1
            above = ranks[shown[start - 1]] if start else None
            below = ranks[shown[end]] if end < len(shown) else None
            run = _between(end - start, above, below, low, high)
            for item_id, rank in zip(shown[start:end], run, strict=True):
                ranks[item_id] = placed[item_id] = rank
            low = min(run[-1], low) if low is not None else run[-1]
            high = max(run[0], high) if high is not None else run[0]
            start = end
    return placed


def _agreeing(shown: Sequence[int], ranks: Mapping[int, int]) -> set[int]:
    """The longest run of the ranked listings of `shown` (newest first) whose ranks fall as
    the feed goes down (a longest strictly decreasing subsequence, by patience sorting)."""
    ranked = [item_id for item_id in shown if item_id in ranks]
    tails: list[int] = []  # per run length, the smallest -rank ending such a run
    ends: list[int] = []  # ... and the index (in `ranked`) of the listing ending it
    before: list[int] = []  # per listing, the index of the one before it in its run
    for index, item_id in enumerate(ranked):
        length = bisect_left(tails, -ranks[item_id])
        if length == len(tails):
            tails.append(-ranks[item_id])
            ends.append(index)
        else:
            tails[length] = -ranks[item_id]
            ends[length] = index
        before.append(ends[length - 1] if length else -1)
    kept: set[int] = set()
    index = ends[-1] if ends else -1
    while index >= 0:
        kept.add(ranked[index])
        index = before[index]
    return kept


def _between(
    count: int, above: int | None, below: int | None, low: int | None, high: int | None
) -> list[int]:
    """Ranks for `count` listings shown in a row (newest first) between the ranked listing
    `above` and the ranked listing `below` them (None: none in the feed), given the lowest and
    highest rank the monitor holds."""
    if above is None:  # newly published: above everything known
        base = max((r for r in (high, below) if r is not None), default=0)
        return [base + GAP * (count - k) for k in range(count)]
    if below is None:  # slid into view from below: below everything known
        base = above if low is None else min(above, low)
        return [base - GAP * (k + 1) for k in range(count)]
    step = (above - below) // (count + 1)
    if step >= 1:
        return [above - step * (k + 1) for k in range(count)]
    # No room left in the gap: ties with `below`, which never count as newer than it.
    return [max(below, above - (k + 1)) for k in range(count)]


@dataclass(frozen=True, slots=True)
class WindowEnd:
    """Where one window of a poll's feed ends: its boundary's rank (None: an empty window)."""

    category_id: int | None
    cut: bool
    rank: int | None


def window_ends(windows: Sequence[FeedWindow], ranks: Mapping[int, int]) -> list[WindowEnd]:
    """Each window's end; `ranks` must hold every organic listing of `windows` (after
    `place`). A window's boundary is its last organic listing (promoted ones are not in
    `organic`: they never move it)."""
    ends = []
    for window in windows:
        shown = list(dict.fromkeys(window.organic))
        rank = ranks[shown[-1]] if shown else None
        ends.append(WindowEnd(window.category_id, window.cut, rank))
    return ends


def has_left(rank: int | None, category_id: int | None, ends: Sequence[WindowEnd]) -> bool:
    """Whether a live listing missing from the feed (its `rank` and `category_id`) left the
    feed's window: its own category's window when one is its, else every window."""
    own = [end for end in ends if end.category_id is not None and end.category_id == category_id]
    if own:
        return any(_left(rank, end) for end in own)
    return all(_left(rank, end) for end in ends)


def _left(rank: int | None, end: WindowEnd) -> bool:
    if not end.cut:
        return True  # the whole feed was read: whatever is missing left it
    if rank is None or end.rank is None:
        return False  # nothing says where it stands, or where the window ends
    return rank > end.rank
