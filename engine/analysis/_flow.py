"""Market flow: listings new, sold and deleted per UTC day of the window (`flow_days`).

A step of `analyse` apart from the niches: it counts the whole market's events by day, from
the state events when the evidence has them (the day a sale was seen), else from the
listings' own end of life.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from ._columns import DELETED, F64, I64, KIND_STATE, SOLD
from ._frame import DAY, Frame
from ._input import AnalysisInput
from ._result import FlowDay

# The market-flow series covers at most this many days, the most recent: one row per day, so
# an imported export whose timestamps span centuries would otherwise cost minutes of CPU.
MAX_FLOW_DAYS = 366


def flow_days(data: AnalysisInput, f: Frame) -> tuple[FlowDay, ...]:
    """One `FlowDay` per day of the window, the last `MAX_FLOW_DAYS` at most."""
    last_day = int(f.now // DAY)
    first_day = max(int(f.start // DAY), last_day - MAX_FLOW_DAYS + 1)
    n_days = last_day - first_day + 1

    def per_day(times: np.ndarray, among: np.ndarray) -> np.ndarray:
        """How many of `times` (those `among`) fall on each day of the series."""
        inside = among & (times >= max(f.start, first_day * DAY)) & (times <= f.now)
        days = _floor_days(times[np.flatnonzero(inside)])
        return np.bincount(days - first_day, minlength=n_days)

    lst, ev = data.listings, data.events
    # Listings seen at a monitor's first poll with no listing date were there before it
    # started: counting them as "new" would draw a spike on day one.
    bootstrap = np.isnan(lst.listed_at[f.rows]) & (lst.first_seen_at[f.rows] <= f.obs_start + 1)
    new = per_day(f.born, ~bootstrap)
    if f.state_events:
        st = ev.kind == KIND_STATE
        if f.skip_likely_events:
            assert ev.likely is not None
            st &= ~ev.likely
        sold = per_day(ev.at, st & (ev.to_state == SOLD))
        deleted = per_day(ev.at, st & (ev.to_state == DELETED))
    else:
        sold = per_day(f.ended, f.sold)
        deleted = per_day(f.ended, f.state == DELETED)
    return tuple(
        FlowDay(
            date=datetime.fromtimestamp((first_day + d) * DAY, UTC).date().isoformat(),
            new=int(new[d]),
            sold=int(sold[d]),
            deleted=int(deleted[d]),
        )
        for d in range(n_days)
    )


def _floor_days(times: F64) -> I64:
    """``times // DAY`` as int64, exactly (the floor of the true quotient), for finite times.
    numpy's float floor-divide goes through fmod and costs ~5x a division: divide, floor,
    then correct the rare quotient that rounded across a whole day (day multiples of DAY
    are exact floats)."""
    q = np.floor(times / DAY)
    q -= q * DAY > times
    q += (q + 1.0) * DAY <= times
    return q.astype(np.int64)  # type: ignore[no-any-return]
