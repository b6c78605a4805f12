"""The demo's simulated market, and how it survives a restart of `make run`.

Monitors keep the listing ids they saw, so a restart must continue the market rather than draw
a new one: the world's seed, its `start` and first id, and how far its clock has run are kept
in `var/demo_market.json` (beside the demo's credentials). A restarted demo builds the same
world and resumes its clock where it stopped, plus the time it was down (at the wall clock's
pace: the market lived on while nobody watched). The clock's position is written every
`SAVE_SECONDS` and on shutdown; a resumed clock starts one save interval ahead of the last
write, so that after a crash it never shows a time before one a monitor already read (a clock
that runs backwards is one monitors stop believing).

A market runs out of future: after `RENEW_AFTER_DAYS` of simulated time (about ten hours of
running at 60x) the demo draws a new one, with another seed and ids above every id of the old
one, so that no monitor mistakes a new listing for one it knew. Its niches and their prices
stay those of the old one (`DEMO_NICHE_SEED`): new listings, the same market.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import trio

from scrapers.simulator import Faults, SimulatorApp, SimulatorConfig

log = logging.getLogger("nichescope.demo")

DAY = 86_400.0
RENEW_AFTER_DAYS = 25  # of simulated time: within the world's horizon and within the 30 days
# ahead of the service's clock that a monitor's first reading may be (engine/monitors/_clock)
SAVE_SECONDS = 5.0
ID_BLOCK = 100_000_000  # a renewed market's ids start this far above the old one's first

# Today's marketplace, as public clients meet it: the API on its own origin, a tenth of the
# feed promoted, and the item detail API refusing nine requests in ten. A reseller's pace: an
# ordinary listing sells in about a month, a hot niche's (one in every category) in about a
# week, and a quarter of the listings are stale stock that hardly sells; at the simulator's
# default pace (12 days, hot six times faster, no stale stock) a hot niche sells nearly every
# listing within a month, and analyses read "100%". The sample month (`demo_sample`) is the
# same market, denser: here the live monitor reads every category's feed to its end in two
# pages, so its polls come every few seconds at one request a second, where a dense
# market's would take a minute.
#
# One market, whatever world is drawn: the niches (which are hot, each one's median price)
# come from `DEMO_NICHE_SEED` in the sample month, in the live market and in every market
# renewed after it. The price book that the sample's sales fill is then the live market's
# own, and the live monitor's deals are listings asking well under what their niche sells
# for; with a seed of their own, the sample's niches sold at other prices than the live
# ones (Vans sneakers at €60 in the sample, €26 live), and every live listing of a niche
# cheaper there read as a deal, of one dearer never.
#
# Sellers cut their prices as real ones do: half the listings, when still unsold one to six
# days after publication, drop 10-25% (two in five of those once more, days later), under the
# same id, so the live monitor sees price drops. In the first ten hours of a first start (ten
# minutes of `make run`) seven listings on sale are cut, the first after an hour.
DEMO_NICHE_SEED = 1
DEMO_MARKET = SimulatorConfig(
    profile="2026-09", promoted_share=0.1, faults=Faults(detail_refusal=0.9),
    n_hot=6, sale_days=30.0, hot_speed=4.0, stale_share=0.25, horizon_days=RENEW_AFTER_DAYS + 5,
    seed=DEMO_NICHE_SEED, niche_seed=DEMO_NICHE_SEED, price_drop_share=0.5,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class MarketState:
    """What a restarted demo needs to serve the same market: the world's `seed`, `start` and
    `first_id`, the simulated time its clock had `reached` and when that was written
    (`saved_at`, wall clock)."""

    seed: int
    start: float
    first_id: int
    reached: float
    saved_at: float


@dataclass(frozen=True, slots=True)
class MarketPlan:
    """The market to serve now (`config`), its state to keep, and a word for the banner."""

    config: SimulatorConfig
    state: MarketState
    story: str


def market_file(var: Path) -> Path:
    return var / "demo_market.json"


def load_state(path: Path) -> MarketState | None:
    """The kept state, or None when there is none or it cannot be read (logged: the demo
    then starts a new market rather than refusing to start)."""
    try:
        data = json.loads(path.read_text())
        return MarketState(
            seed=int(data["seed"]), start=float(data["start"]), first_id=int(data["first_id"]),
            reached=float(data["reached"]), saved_at=float(data["saved_at"]),
        )  # fmt: skip
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.warning("demo: %s is unreadable (%s); a new simulated market starts", path, err)
        return None


def save_state(path: Path, state: MarketState) -> None:
    """Write atomically (a crash mid-write leaves the previous state, not half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(dataclasses.asdict(state)))
    os.replace(partial, path)


def plan_market(kept: MarketState | None, now: float) -> MarketPlan:
    """The saved market continued at `now` (wall clock), else a new one starting at `now`:
    on first start, or once the saved one has run `RENEW_AFTER_DAYS`."""
    if kept is not None:
        resumed = kept.reached + SAVE_SECONDS * DEMO_MARKET.speed + max(0.0, now - kept.saved_at)
        days = (resumed - kept.start) / DAY
        if days < RENEW_AFTER_DAYS:
            state = dataclasses.replace(kept, reached=resumed, saved_at=now)
            return MarketPlan(_config(kept, clock_at=resumed), state, f"continued, day {days:.1f}")
        state = MarketState(seed=kept.seed + 1, start=now, first_id=kept.first_id + ID_BLOCK,
                            reached=now, saved_at=now)  # fmt: skip
        story = f"a new market: the previous one ran its {RENEW_AFTER_DAYS} days"
        return MarketPlan(_config(state, clock_at=now), state, story)
    state = MarketState(seed=DEMO_MARKET.seed, start=now, first_id=DEMO_MARKET.first_id,
                        reached=now, saved_at=now)  # fmt: skip
    return MarketPlan(_config(state, clock_at=now), state, "a new market")


def _config(state: MarketState, *, clock_at: float) -> SimulatorConfig:
    return dataclasses.replace(
        DEMO_MARKET, seed=state.seed, start=state.start, first_id=state.first_id, clock_at=clock_at
    )


async def keep_state(app: SimulatorApp, path: Path, state: MarketState) -> NoReturn:
    """Write how far the market's clock has run every `SAVE_SECONDS`, and once more when
    cancelled (the service's shutdown). A write that fails is logged and retried at the next
    interval: the demo goes on serving either way."""
    try:
        while True:
            _write(app, path, state)
            await trio.sleep(SAVE_SECONDS)
    finally:
        _write(app, path, state)  # no await: runs to the end even when cancelled


def _write(app: SimulatorApp, path: Path, state: MarketState) -> None:
    try:
        save_state(path, dataclasses.replace(state, reached=app.sim_now(), saved_at=time.time()))
    except OSError as err:
        log.warning("demo: cannot keep the market's state in %s: %s", path, err)
