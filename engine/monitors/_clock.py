"""Which clock stamps a poll's observations: the market's, checked against the service's.

The marketplace states its own time in every answer (`pagination.time`, the `Date` header).
Stamping on it makes durations the market's: on the real site it agrees with ours within
seconds, and a simulator that runs faster than real time (a demo, a test) gets true days to
sell instead of minutes. But a clock read off the wire is untrusted input, so it is believed
only while it behaves (`stamp_poll`):

- A monitor's first reading must lie near the service's clock (`FIRST_BEHIND` behind to
  `FIRST_AHEAD` ahead); until one does, the monitor stays on the service's clock (so an old
  monitor, or a market whose clock is wrong, keeps consistent stamps instead of mixing two
  clocks that disagree).
- Once on the market's clock, a reading must not run backwards from the last poll's and may
  run ahead at most `MAX_RATE` times the service's elapsed time (plus `SLACK`): a cached answer
  with a stale `Date`, or a hostile far-future one, cannot drag every later stamp with it.
- A poll without a believable reading continues the market's clock from the last poll at the
  service's rate (`extrapolated`), so one odd answer never switches a monitor's clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from store import PollRecord

# A first reading is believed from this far behind ours (a cached answer) to this far ahead (an
# accelerated simulator that started before the monitor's first poll).
FIRST_BEHIND = timedelta(days=2)
FIRST_AHEAD = timedelta(days=30)
# How much faster than ours the market's clock may run: the real site runs 1x, the demo's
# simulator 60x, the accuracy test's 57,600x (a month in under a minute). The bound is there to
# refuse a jump of years (a hostile or broken `Date`), not to judge a simulator.
MAX_RATE = 100_000.0
SLACK = timedelta(minutes=5)

Clock = Literal["market", "service"]


@dataclass(frozen=True, slots=True)
class PollStamp:
    """When a poll's observations happened, on the clock that says it."""

    at: datetime
    clock: Clock
    extrapolated: bool = False  # no believable reading: the last one plus the service's time


def stamp_poll(reading: datetime | None, ended: datetime, last: PollRecord | None) -> PollStamp:
    """The stamp of a poll that ended at `ended` (the service's clock: what it saw was there by
    then) and read the market's clock as `reading` (None: the answers stated none), after the
    monitor's `last` good poll."""
    if last is None or last.clock != "market" or last.market_at is None:
        if reading is not None and ended - FIRST_BEHIND <= reading <= ended + FIRST_AHEAD:
            return PollStamp(reading, "market")
        return PollStamp(ended, "service")
    elapsed = max(ended - last.finished_at, timedelta(0))
    latest = last.market_at + elapsed * MAX_RATE + SLACK
    if reading is not None and last.market_at <= reading <= latest:
        return PollStamp(reading, "market")
    return PollStamp(last.market_at + elapsed, "market", extrapolated=True)
