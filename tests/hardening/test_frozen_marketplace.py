"""A frozen marketplace is a failed poll within one request's timeout, shown to the owner, and
the monitor comes back by itself when the marketplace answers again (#21, item 10).

Before: with the marketplace accepting connections and answering nothing, monitors stayed
`active` with `next_poll_at` in the past and no error for 70 s (each request retried after its
timeout, robots.txt and the warm-up too), and then failed as "disallowed by robots.txt", which
was remembered for an hour. The scraper half is tests/scrapers/test_frozen_market.py; the hourly
retry of monitors in `error`, tests/engine/test_engine.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import trio

from api.settings import Settings
from scrapers.simulator import SimOrigins, SimulatorConfig, World, create_simulator_app, serve_app
from tests.api.helpers import signed_in, wait_active
from tests.conftest import ServiceClient, start_service

TIMEOUT = 2.0
DEADLINE = 60  # generous: a busy machine is slow; the bug was silence for minutes


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    """What the marketplace does to a monitor does not depend on the database."""
    shutil.copy(sqlite_template, tmp_path / "frozen.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'frozen.db'}"


async def _until(client: ServiceClient, monitor_id: str, done: Any) -> dict[str, Any]:
    with trio.fail_after(DEADLINE):
        while not done(monitor := (await client.get(f"/api/monitoring/{monitor_id}")).json()):
            await trio.sleep(0.1)
    return monitor  # type: ignore[no-any-return]


async def test_a_frozen_marketplace_shows_as_failed_polls_and_heals(
    settings: Settings, nursery: trio.Nursery
) -> None:
    app = create_simulator_app(World(SimulatorConfig(seed=4, speed=600.0, n_listings=150)))
    origins: SimOrigins = await nursery.start(serve_app, app, "127.0.0.1", 0, 0)
    settings = settings.model_copy(update={
        "market_origins": (origins.site, origins.api), "market_rate": 0,
        "market_api_origins": ((origins.site, origins.api),), "min_poll_seconds": 1,
        "market_timeout_seconds": TIMEOUT, "monitor_max_errors": 1000,
    })  # fmt: skip
    service, _ = await start_service(nursery, settings)
    async with service.client() as user:
        await signed_in(user)
        started = await user.post(
            "/api/monitoring/start",
            json={"url": f"{origins.site}/catalog?catalog[]=1904", "interval_seconds": 1},
        )
        monitor_id = started.json()["id"]
        await wait_active(user, monitor_id)

        app.frozen = True
        seen = len(app.log)
        failed = await _until(user, monitor_id, lambda m: m["consecutive_errors"] > 0)
        # The poll failed at its first request's timeout: that request was not retried (it
        # was, four times with backoff, before), so the failure came after one timeout rather
        # than minutes. At most the next poll's first try is in the log beside it.
        asked = [(r["path"], r["query"]) for r in app.log[seen:]]
        assert asked and asked.count(asked[0]) <= 2, asked
        assert failed["status"] == "active" and failed["last_error_kind"] == "unavailable"
        assert "no complete answer" in failed["last_error"], failed["last_error"]
        page = (await user.get(f"/monitors/{monitor_id}")).text
        assert "The last check failed" in page and "did not answer" in page

        app.frozen = False
        healed = await _until(user, monitor_id, lambda m: m["consecutive_errors"] == 0)
        assert healed["status"] == "active" and healed["last_error_kind"] is None
