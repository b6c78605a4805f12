"""Run the simulator on a real loopback socket inside a test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio

from scrapers import ClientSettings, MarketClient
from scrapers.simulator import SimulatorApp, SimulatorConfig, World, create_simulator_app, serve_app


@dataclass
class Running:
    origin: str
    app: SimulatorApp

    def requests(self, *, market_only: bool = True) -> list[dict[str, object]]:
        return [r for r in self.app.log if not market_only or r["path"] not in ("/robots.txt",)]


@asynccontextmanager
async def simulator(config: SimulatorConfig) -> AsyncIterator[Running]:
    app = create_simulator_app(World(config))
    async with trio.open_nursery() as nursery:
        origin = await nursery.start(serve_app, app)
        yield Running(origin, app)
        nursery.cancel_scope.cancel()


def settings_for(origin: str, **overrides: object) -> ClientSettings:
    values: dict[str, object] = {"extra_origins": (origin,), "rate": 20.0, "burst": 5}
    values.update(overrides)
    return ClientSettings(**values)  # type: ignore[arg-type]


@asynccontextmanager
async def client_for(origin: str, **overrides: object) -> AsyncIterator[MarketClient]:
    async with MarketClient(settings_for(origin, **overrides), seed=7) as client:
        yield client
