"""The marketplace simulator: a seeded synthetic world served over HTTP (Hypercorn on Trio).

Wire profiles `legacy` (the library default) and `2026-09` (the CLI default), switchable while
running. One origin, or two with an API port (`serve_app(app, host, port, api_port)` then reports
`SimOrigins(site, api)` instead of the origin string).

Test-only paths: `GET /__sim__/truth[?ids=1,2]`, `GET /__sim__/requests[?since=N]`,
`GET|POST /__sim__/faults`, `GET|POST /__sim__/profile`, `GET|POST /__sim__/challenge`,
`GET /__sim__/clock`.

The world (`_catalogue`): six categories, each with its own sizes, brands and price level;
hot niches dealt across categories; its pace set by `sale_days`, `hot_speed` and
`stale_share`; sellers cut prices (`price_drop_share`, `_drops`); `clock_at` and `first_id`
continue or move a market, `niche_seed` keeps its niches and their prices in a world of
another seed (`_niches`). Listing photos are served at the URLs the items carry
(`/photos/<id>.jpg`, on the site origin).

Since September 2026 (`SimulatorConfig`): the site origin behind a browser challenge
(`challenge_www`), listing ids allotted with drafts (`draft_share`), `access_token_web` a JWT;
several apps (sites) may share one client budget (`RequestBudget`, `Faults.budget_per_ip`).
"""

from __future__ import annotations

from ._app import SimulatorApp, create_simulator_app
from ._budget import RequestBudget
from ._catalogue import NICHE_PAIRS
from ._config import LOCALES, PROFILES, Faults, SimulatorConfig
from ._render_2026 import CONDITION_LABELS
from ._serve import SimOrigins, config_from_args, serve_app, serve_simulator, simulator_main
from ._world import CATEGORIES, FeedFilter, Niche, SimListing, World

__all__ = [
    "CATEGORIES",
    "CONDITION_LABELS",
    "LOCALES",
    "NICHE_PAIRS",
    "PROFILES",
    "Faults",
    "FeedFilter",
    "Niche",
    "RequestBudget",
    "SimListing",
    "SimOrigins",
    "SimulatorApp",
    "SimulatorConfig",
    "World",
    "config_from_args",
    "create_simulator_app",
    "serve_app",
    "serve_simulator",
    "simulator_main",
]
