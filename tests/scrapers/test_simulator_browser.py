"""A real browser passes the simulator's challenge without a visible step and then holds the
session, which a plain HTTP client can carry with the browser's User-Agent (and only with it):
what public monitors do since September 2026 (MARKETPLACE.md).

Debian's chromium driven by Playwright's sync API, whole inside one worker thread, as the web
tests do (`tests/web/conftest.py`), while the simulator serves in the test's nursery.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import trio

from scrapers.simulator import SimulatorConfig
from tests.web.conftest import CHROMIUM, CHROMIUM_ARGS, require_chromium

from ._challenged import OTHER_UA, browser_like, is_challenge, two_origins

SESSION = ("access_token_web", "anon_id", "cf_clearance")
PASS_SECONDS = 20.0  # a second or two for a real browser; room for a busy machine


def _open_home(site: str) -> dict[str, str]:
    """Open the site's home page in headless chromium; the cookies it holds once it holds the
    whole session. `AssertionError` if that takes more than `PASS_SECONDS`."""
    from playwright.sync_api import sync_playwright

    # trio-asyncio makes every new asyncio loop a trio-asyncio one, which Playwright's own
    # loop must not be; the policy is per thread, and this is our thread.
    asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            try:
                context = browser.new_context()
                context.set_default_timeout(PASS_SECONDS * 1000)
                page = context.new_page()
                page.goto(f"{site}/")  # the challenge page: a 403, not an error to Playwright
                deadline = time.monotonic() + PASS_SECONDS
                while True:
                    cookies = {c["name"]: c["value"] for c in context.cookies()}
                    if all(name in cookies for name in SESSION):
                        return cookies
                    assert time.monotonic() < deadline, f"no session yet: {sorted(cookies)}"
                    page.wait_for_timeout(100)  # the browser's own event loop keeps running
            finally:
                browser.close()
    finally:
        asyncio.set_event_loop_policy(None)


async def test_a_real_browser_passes_the_challenge_and_its_session_works_with_its_ua() -> None:
    require_chromium()
    config = SimulatorConfig(seed=61, n_listings=120, horizon_days=1.0, speed=1.0,
                             profile="2026-09", challenge_www=True)  # fmt: skip
    async with two_origins(config) as sim:
        # Not cancellable from trio (a thread cannot be interrupted): Playwright's timeouts
        # and the deadline above bound it instead.
        cookies = await trio.to_thread.run_sync(_open_home, sim.site)
        cleared: list[dict[str, Any]] = [
            r for r in sim.app.log if r["path"] == "/" and r["cleared"] and r["status"] == 200
        ]
        assert cleared, "the browser's reload came back with its clearance"
        assert any(r["challenged"] for r in sim.app.log), "the first visit was challenged"
        browser_ua = cleared[0]["ua"]
        assert "Chrome" in browser_ua

        session = {name: cookies[name] for name in SESSION}
        async with browser_like(browser_ua, **session) as http:
            home = await http.get(f"{sim.site}/robots.txt")
            assert home.status_code == 200 and "User-agent" in home.text
            feed = await http.get(f"{sim.api}/svc-catalogue/items?per_page=10")
            assert feed.status_code == 200 and feed.json()["items"]
        async with browser_like(OTHER_UA, **session) as other:
            refused: httpx.Response = await other.get(f"{sim.site}/robots.txt")
            assert is_challenge(refused)
