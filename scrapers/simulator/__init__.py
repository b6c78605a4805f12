"""The marketplace simulator: a seeded synthetic world served over HTTP (Hypercorn on Trio).

Test-only paths: `GET /__sim__/truth[?ids=1,2]`, `GET /__sim__/requests[?since=N]`,
`GET|POST /__sim__/faults`, `GET /__sim__/clock`.
"""

from __future__ import annotations

from ._app import SimulatorApp, create_simulator_app
from ._config import Faults, SimulatorConfig
from ._serve import config_from_args, serve_app, serve_simulator, simulator_main
from ._world import FeedFilter, Niche, SimListing, World

__all__ = [
    "Faults",
    "FeedFilter",
    "Niche",
    "SimListing",
    "SimulatorApp",
    "SimulatorConfig",
    "World",
    "config_from_args",
    "create_simulator_app",
    "serve_app",
    "serve_simulator",
    "simulator_main",
]
