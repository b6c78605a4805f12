"""The notification benchmark's two peers, each in its own process so that their CPU stays off
the measured node: the marketplace simulator with a steady stream of new listings, and a
Standard Webhooks receiver that verifies every request and notes when it arrived.

Run as `python -m bench._notify_peers simulator ARRIVALS_PER_SECOND` or
`python -m bench._notify_peers receiver` (signing secret in BENCH_WEBHOOK_SECRET); each
prints its origin on one line once it listens and serves until terminated.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trio

from scrapers.simulator import SimulatorConfig, serve_simulator
from scrapers.simulator._config import PROFILE_2026_09
from tests.notify_fakes import Reply, Request, WebhookReceiver

SPEED = 60.0  # simulated seconds per real second, as `nichescope simulator` runs by default
DAY = 86_400.0


class TimedReceiver(WebhookReceiver):
    """`tests.notify_fakes.WebhookReceiver` (signature, timestamp tolerance, replays refused
    with 409) that also notes, for each accepted id, the wall-clock time its whole request
    had arrived (before verification, so verifying costs the latency nothing).
    `GET /__bench__/results` answers what it saw."""

    def __init__(self, secret: str) -> None:
        super().__init__(secret)
        self.arrivals: dict[str, float] = {}
        self.items: dict[str, Any] = {}

    def handle(self, request: Request) -> Reply:
        arrived = time.time()
        if request.method == "GET" and request.path == "/__bench__/results":
            reasons = Counter(reason for reason, _ in self.rejected)
            return Reply.of_json(
                200,
                {
                    "arrivals": self.arrivals,
                    "items": self.items,
                    "rejected": dict(reasons),
                    "requests": len(self.requests) - 1,
                },
            )
        reply = super().handle(request)
        if reply.status == 204:
            accepted = self.accepted[-1]
            self.arrivals[accepted.id] = arrived
            listing = accepted.payload.get("listing") or {}
            self.items[accepted.id] = listing.get("item_id")
        return reply


async def _serve_receiver(secret: str) -> None:
    receiver = TimedReceiver(secret)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(receiver.serve)
        print(url, flush=True)


async def _serve_simulator(arrivals_per_second: float) -> None:
    config = SimulatorConfig(
        seed=1,
        speed=SPEED,
        n_listings=600,
        # New listings at `arrivals_per_second` of real time, across the whole marketplace.
        arrivals_per_day=arrivals_per_second * DAY / SPEED,
        horizon_days=1.0,  # 24 real minutes of listings: longer than any run
        start=time.time(),  # the market's dates agree with the wall clock
        profile=PROFILE_2026_09,
        promoted_share=0.1,
    )
    async with trio.open_nursery() as nursery:
        origin = await nursery.start(serve_simulator, config, "127.0.0.1", 0)
        print(origin, flush=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["receiver"]:
        trio.run(_serve_receiver, os.environ["BENCH_WEBHOOK_SECRET"])
    elif argv[:1] == ["simulator"] and len(argv) == 2:
        trio.run(_serve_simulator, float(argv[1]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
