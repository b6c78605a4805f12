"""Fixtures for the web pages: the real service on SQLite with a known public URL, a real
local OpenID Connect provider, and Debian's chromium driven by Playwright.

Playwright's sync API is bound to the thread that started it, so each browser scenario runs
whole inside one `trio.to_thread.run_sync` call (`in_browser`) while the service keeps running
in the test's nursery.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio

from api.process.serve import ServeOptions, serve
from api.settings import Settings
from bench._common import free_port
from engine import Marketplace
from tests.conftest import RunningService
from tests.web.oidc_provider import LocalOidcProvider, run_provider

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
REQUIRE_BROWSER = bool(os.environ.get("NICHESCOPE_REQUIRE_BROWSER") == "1" or os.environ.get("CI"))
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
PASSWORD = "correct horse battery"
# The trial's quotas for the pages' journeys: room for their monitors and runs, polls each second.
TRIAL = {
    "trial": {
        "active_monitors": 5,
        "runs_per_day": 50,
        "items_per_run": 5000,
        "min_poll_seconds": 1,
    }
}

T = TypeVar("T")
StartWeb = Callable[..., Awaitable[RunningService]]


@pytest.fixture
def start_web(
    nursery: trio.Nursery, tmp_path: Path, sqlite_template: Path, market: Marketplace
) -> Iterator[StartWeb]:
    """`await start_web(**settings_overrides)`: the service on a fresh SQLite copy, with the
    fake marketplace unless `fake_market=False` (then the real client, e.g. to a simulator),
    or as `make run` serves it with `demo=True` (the simulator, the demo account)."""
    stops: list[trio.Event] = []

    async def start(
        *, fake_market: bool = True, demo: bool = False, **overrides: Any
    ) -> RunningService:
        database = tmp_path / f"web-{len(stops)}.db"
        shutil.copy(sqlite_template, database)
        # The public URL (used in e-mailed links and the OIDC redirect) must be known before
        # the service starts, so the port is picked here rather than by binding port 0.
        port = free_port()
        settings = Settings(
            database_url=f"sqlite+aiosqlite:///{database}",
            cookie_secure=False,
            outbox_dir=tmp_path / f"outbox-{len(stops)}",
            public_url=f"http://127.0.0.1:{port}",
            **overrides,
        )
        stop = trio.Event()
        stops.append(stop)
        binds = await nursery.start(
            lambda task_status: serve(
                settings,
                ServeOptions(port=port, graceful_seconds=1, demo=demo, demo_simulator_port=0),
                market=market if fake_market and not demo else None,
                shutdown_trigger=stop,
                task_status=task_status,
            )
        )
        return RunningService(url=binds[0], settings=settings)

    yield start
    for stop in stops:
        stop.set()


@pytest.fixture
def oidc_provider() -> Iterator[LocalOidcProvider]:
    with run_provider() as provider:
        yield provider


def require_chromium() -> None:
    """Skip without Debian's chromium and playwright; fail instead under CI or
    NICHESCOPE_REQUIRE_BROWSER=1."""
    reason = f"chromium not found at {CHROMIUM} (apt-get install chromium)"
    if not Path(CHROMIUM).exists():
        if REQUIRE_BROWSER:
            pytest.fail(reason + "; required because CI or NICHESCOPE_REQUIRE_BROWSER=1 is set")
        pytest.skip(reason)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        if REQUIRE_BROWSER:
            pytest.fail("playwright is not installed (pip install -e '.[dev]')")
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")


def _run_in_chromium(scenario: Callable[[Any], T]) -> T:
    from playwright.sync_api import sync_playwright

    # trio-asyncio makes every new asyncio loop a trio-asyncio one, which Playwright's own
    # loop must not be; trio-asyncio keeps this policy per thread, and this is our thread.
    asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    try:
        return _drive(sync_playwright, scenario)
    finally:
        asyncio.set_event_loop_policy(None)


def _drive(sync_playwright: Any, scenario: Callable[[Any], T]) -> T:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 860})
            context.set_default_timeout(10_000)
            page = context.new_page()
            return scenario(page)
        finally:
            browser.close()


InBrowser = Callable[[Callable[[Any], T]], Awaitable[T]]


@pytest.fixture
def in_browser() -> InBrowser[Any]:
    """`await in_browser(scenario)`: run `scenario(page)` in headless chromium, in a thread."""
    require_chromium()

    async def run(scenario: Callable[[Any], T]) -> T:
        # Not cancellable from trio (a thread cannot be interrupted): Playwright's own
        # per-action timeout (10 s) bounds every step instead.
        return await trio.to_thread.run_sync(_run_in_chromium, scenario)

    return run


def screenshot(page: Any, name: str, *, full_page: bool = True) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)
