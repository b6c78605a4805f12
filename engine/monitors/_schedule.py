"""When a monitor polls next: on its search's grid, so that monitors of one search poll
together.

Monitors of one search share a node's marketplace requests (`_shared_feeds`): a poll takes a
feed fetched less than `SHARE_OF_INTERVAL` of its interval ago. Left at their own phases,
monitors of one search would each read a different subset of the feed's fetches, and a listing
born and sold between two of them would be seen by some and not others. On one grid per search
they read the same fetch at every tick: one request per tick, one view of the market.

The grid of a search is every instant `anchor + k * interval` (seconds since the epoch), its
anchor drawn from the canonical URL, so different searches spread over the clock while monitors
of one search meet: with intervals of 60 and 300 s, every 300 s tick is also a 60 s tick. A
monitor's first poll is at once (and a poll someone asked for); its next is the first tick at
least `MIN_GAP_SHARE` of an interval later, so polls are never closer than that.
"""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime, timedelta

# A poll after an off-grid one waits at least this share of its interval.
MIN_GAP_SHARE = 0.25
_ANCHOR_SPAN = 86_400  # anchors spread over a day's seconds


def grid_anchor(url: str) -> float:
    """The search's anchor: seconds since the epoch, the same on every node."""
    digest = hashlib.sha256(url.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % (_ANCHOR_SPAN * 1000) / 1000


def next_tick(after: datetime, interval_seconds: float, url: str) -> datetime:
    """The first tick of `url`'s grid at least `MIN_GAP_SHARE` of an interval after `after`."""
    interval = max(float(interval_seconds), 1e-3)
    earliest = after.timestamp() + MIN_GAP_SHARE * interval
    anchor = grid_anchor(url)
    k = math.ceil((earliest - anchor) / interval)
    tick = anchor + k * interval
    return datetime.fromtimestamp(tick, UTC) if after.tzinfo else _naive(tick)


def _naive(tick: float) -> datetime:
    return datetime.fromtimestamp(tick, UTC).replace(tzinfo=None)


def seconds_until(at: datetime, now: datetime) -> float:
    return max(0.0, (at - now) / timedelta(seconds=1))
