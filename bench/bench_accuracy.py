"""Accuracy benchmark: a full simulated month watched by a monitor of the real service.

Run: `python -m bench.bench_accuracy [--smoke]` (about two minutes; `--smoke`: two simulated
days, not judged). The simulator plants ten hot
(category, brand) niches among sixty; the real service (embedded SQLite, real scrapers client)
monitors the whole catalogue over REST, analyses it, and the figures are compared with the
simulator's ground truth: precision@10 of the ranked niches against the planted hot ones, and
the mean absolute error of sell-through and of the median sold price per niche. Baseline,
measured in the same run: a random ranking (expected precision@10 = hot pairs seen / pairs
seen). Definitions (and why no time is mapped: the product stamps on the market's clock):
tests/e2e/accuracy.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trio

from api.settings import Settings
from tests.e2e.accuracy import Accuracy, Scenario, measure

# Six simulated hours per real second: polls (about two seconds each over ~1,100 open
# listings) come every half day or so of market time, a month takes about two minutes.
SCENARIO = Scenario(seed=3, speed=21_600.0, days=30.0)
TARGET = 0.8


async def _run(folder: Path, scenario: Scenario) -> Accuracy:
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{folder / 'bench.db'}",
        cookie_secure=False,
        outbox_dir=folder / "outbox",
        public_url="http://bench.local",
        plan_quotas={
            "trial": {
                "active_monitors": 5,
                "runs_per_day": 50,
                "items_per_run": 5000,
                "min_poll_seconds": 1,
            }
        },
    )
    async with trio.open_nursery() as nursery:
        result = await measure(nursery, settings, scenario)
        nursery.cancel_scope.cancel()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.bench_accuracy")
    parser.add_argument("--smoke", action="store_true", help="two simulated days, not judged")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    scenario = dataclasses.replace(SCENARIO, days=2.0) if args.smoke else SCENARIO
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nichescope-bench-") as folder:
        result = trio.run(_run, Path(folder), scenario)
    elapsed = time.perf_counter() - started
    print(
        f"scenario: seed {scenario.seed}, {scenario.days:g} days at "
        f"{scenario.speed / 3600:g} simulated hours per second, "
        f"{len(result.hot)} hot niches planted of 60, {elapsed:.0f} s wall clock"
    )
    for line in result.lines():
        print("  " + line)
    ratio = result.precision / result.random_baseline if result.random_baseline else float("inf")
    print(
        f"  precision@10 {result.precision:.2f} vs random ranking {result.random_baseline:.2f} "
        f"({ratio:.1f}x); target >= {TARGET}: {'met' if result.precision >= TARGET else 'MISSED'}"
    )
    print(
        f"  transitions: {result.sold_recorded} sales recorded, {len(result.false_sales)} not "
        f"sold in truth, {result.false_transitions} changes to a state never held"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
