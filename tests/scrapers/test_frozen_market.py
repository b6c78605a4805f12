"""A marketplace that accepts connections and never answers (#21, item 10).

Before: each request waited its timeout, then was retried with backoff, robots.txt and the
session warm-up included, and an unreachable robots.txt was remembered as "disallow all" for an
hour: a poll on a frozen marketplace was silent for minutes and then failed with a wrong reason,
and kept failing after the marketplace came back. Now a timeout ends the call at once as
`MarketplaceTimeout` (the next poll is the retry), and nothing about robots.txt is remembered
from a marketplace that did not answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import pytest
import trio

from scrapers import MarketplaceAdapter, MarketplaceTimeout

from ._sim import client_for, simulator
from .test_client_simulator import SMALL

TIMEOUT = 5.0


@asynccontextmanager
async def frozen_marketplace() -> AsyncIterator[str]:
    """A real listening socket that accepts, reads and never says a word."""

    async def swallow(stream: trio.SocketStream) -> None:
        async with stream:
            while await stream.receive_some(65536):
                pass

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, swallow, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        yield f"http://127.0.0.1:{port}"
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("profile", ["legacy", "2026-09"])
async def test_a_frozen_marketplace_fails_the_call_within_its_timeout(
    autojump_clock: trio.abc.Clock, profile: str
) -> None:
    async with frozen_marketplace() as origin:  # noqa: SIM117 (a server, then its client)
        async with client_for(origin, request_timeout=TIMEOUT, max_retries=4) as client:
            adapter = MarketplaceAdapter(client, profile=profile)
            query = await adapter.query_for(f"{origin}/catalog?catalog[]=1904")
            started = trio.current_time()
            with pytest.raises(MarketplaceTimeout):
                await adapter.fetch_catalogue_page(query)
            # One request's timeout (robots.txt's), not retries times timeouts.
            assert trio.current_time() - started <= TIMEOUT + 1


async def test_robots_are_fetched_again_once_the_marketplace_answers(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with simulator(SMALL) as sim:  # noqa: SIM117 (a server, then its client)
        async with client_for(sim.origin, request_timeout=TIMEOUT) as client:
            adapter = MarketplaceAdapter(client, profile="legacy")
            query = await adapter.query_for(f"{sim.origin}/catalog")
            sim.app.frozen = True
            with pytest.raises(MarketplaceTimeout):
                await adapter.fetch_catalogue_page(query)
            sim.app.frozen = False
            assert (await adapter.fetch_catalogue_page(query)).listings
