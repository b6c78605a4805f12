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

Each monitor polls a little after the tick (`SPREAD_SHARE` of an interval at most, at most
`SPREAD_CAP_SECONDS`, fixed by its id): the first of a tick fetches, the others take that
fetch (it is far younger than their reuse window), and their writes do not all come at once
(on SQLite a thousand monitors over sixty searches, all at the tick, queued ten seconds).
"""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime, timedelta

# A poll after an off-grid one waits at least this share of its interval.
MIN_GAP_SHARE = 0.25
# How far after its tick a monitor polls: a share of its interval, capped.
SPREAD_SHARE = 0.1
SPREAD_CAP_SECONDS = 10.0
_ANCHOR_SPAN = 86_400  # anchors spread over a day's seconds


def grid_anchor(url: str) -> float:
    """The search's anchor: seconds since the epoch, the same on every node."""
    digest = hashlib.sha256(url.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % (_ANCHOR_SPAN * 1000) / 1000


def spread(interval_seconds: float, member: str) -> float:
    """How many seconds after a tick the monitor `member` polls (0 for no member)."""
    if not member:
        return 0.0
    window = min(SPREAD_SHARE * float(interval_seconds), SPREAD_CAP_SECONDS)
    digest = hashlib.sha256(member.encode("utf-8", "surrogatepass")).digest()
    return window * int.from_bytes(digest[:4], "big") / 2**32


def next_tick(after: datetime, interval_seconds: float, url: str, member: str = "") -> datetime:
    """When the monitor `member` of `url` polls next: its place after the first tick of the
    search's grid that leaves at least `MIN_GAP_SHARE` of an interval after `after`."""
    interval = max(float(interval_seconds), 1e-3)
    offset = grid_anchor(url) + spread(interval, member)
    earliest = after.timestamp() + MIN_GAP_SHARE * interval
    k = math.ceil((earliest - offset) / interval)
    tick = offset + k * interval
    return datetime.fromtimestamp(tick, UTC) if after.tzinfo else _naive(tick)


def _naive(tick: float) -> datetime:
    return datetime.fromtimestamp(tick, UTC).replace(tzinfo=None)


def seconds_until(at: datetime, now: datetime) -> float:
    return max(0.0, (at - now) / timedelta(seconds=1))
