"""One browser session, driven through Playwright's sync API in a worker thread.

Playwright's sync API is bound to the thread that starts it, and a thread cannot be cancelled:
every wait here is bounded by Playwright timeouts derived from the job's deadline, the cookie
poll also watches `job.cancelled`, and the browser is closed in every case. The thread reports
its end on `job.closed` (a trio event) so that the caller can wait for the browser to be gone.

What the browser is let do (see `_browser_egress` for the policy):
- a fresh, temporary profile and a fresh context each time (Playwright's own), no downloads,
  no service workers (their requests would bypass the router), images, media and fonts
  never fetched;
- every request the page makes goes through the router, and every connection the browser
  opens through the guard proxy (`_browser_proxy`); the browser resolves no host name itself;
- its environment is the few variables it needs (never the service's secrets).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import trio

from ._browser_egress import EgressPolicy
from ._sessions import TOKEN_COOKIE
from .errors import BrowserUnavailable

log = logging.getLogger(__name__)

NOT_INSTALLED = "playwright is not installed: pip install 'nichescope[browser]'"
POLL_SECONDS = 0.25
LOGGED_REFUSALS = 50
# Headless on a server without a GPU or a display; no background traffic of Chromium's own;
# WebRTC never opens a socket beside the proxy. Playwright adds --headless itself.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
)
_SKIPPED_RESOURCES = frozenset({"image", "media", "font"})
_ENVIRONMENT = frozenset({"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR"})
_ENVIRONMENT_PREFIXES = ("LC_", "XDG_", "FONTCONFIG_")


@dataclass(frozen=True, slots=True)
class Harvest:
    """What a browser session yields: the site's cookies and the User-Agent they are
    bound to."""

    cookies: tuple[tuple[str, str], ...]
    user_agent: str


@dataclass(slots=True)
class BrowserJob:
    """One session to open; shared by the caller (trio) and the thread."""

    executable: str
    site: str  # the site's origin, no trailing slash
    policy: EgressPolicy
    proxy_url: str  # the guard proxy
    timeout: float  # seconds, launch to cookie
    closed: trio.Event  # set (through `token`) once the thread is done and the browser gone
    token: trio.lowlevel.TrioToken
    cancelled: threading.Event = field(default_factory=threading.Event)


def run_job(job: BrowserJob) -> Harvest | BrowserUnavailable:
    """Open the site in a fresh browser and wait for its session cookie. Runs in a worker
    thread; never raises: every failure comes back as a `BrowserUnavailable` (a bug's
    traceback is logged)."""
    try:
        with _own_event_loop():
            return _run(job)
    except BrowserUnavailable as err:
        return err
    except Exception as err:
        log.exception("the browser session for %s failed", job.site)
        return BrowserUnavailable(f"the browser failed: {type(err).__name__}: {err}")
    finally:
        with suppress(trio.RunFinishedError):  # nobody is left to tell
            trio.from_thread.run_sync(job.closed.set, trio_token=job.token)


def _run(job: BrowserJob) -> Harvest:
    try:
        from playwright.sync_api import Error, sync_playwright
        from playwright.sync_api import TimeoutError as PlaywrightTimeout
    except ImportError:
        raise BrowserUnavailable(NOT_INSTALLED) from None
    deadline = time.monotonic() + job.timeout
    started = False
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=job.executable,
                headless=True,
                args=[*CHROMIUM_ARGS, *_network_args(job.proxy_url)],
                env=_environment(),
                timeout=_ms(deadline),
            )
            started = True
            try:
                return _harvest(browser, job, deadline, Error, PlaywrightTimeout)
            finally:
                try:
                    browser.close()
                except Error as err:
                    log.warning("the browser did not close cleanly: %s", _line(err))
    except PlaywrightTimeout as err:
        if not started:
            raise BrowserUnavailable(f"the browser failed to start: {_line(err)}") from err
        raise BrowserUnavailable(_too_late(job)) from err
    except (Error, OSError) as err:
        stage = "failed" if started else "failed to start"
        raise BrowserUnavailable(f"the browser {stage}: {_line(err)}") from err


def _harvest(
    browser: Any,
    job: BrowserJob,
    deadline: float,
    error: type[Exception],
    timeout: type[Exception],
) -> Harvest:
    user_agent = _public_user_agent(browser)
    context = browser.new_context(
        user_agent=user_agent,
        accept_downloads=False,
        service_workers="block",
        viewport={"width": 1280, "height": 800},
    )
    context.set_default_timeout(_ms(deadline))
    context.route("**/*", _Router(job.policy, error).handle)
    page = context.new_page()
    home = job.site + "/"
    try:
        page.goto(home, wait_until="commit", timeout=_ms(deadline))
    except timeout:
        raise
    except error as err:
        # A navigation the page started itself (the challenge reloads) aborts ours: fine.
        if "ERR_ABORTED" not in str(err):
            raise BrowserUnavailable(f"the browser could not open {home}: {_line(err)}") from err
    while True:
        jar = context.cookies(job.site)
        if any(c.get("name") == TOKEN_COOKIE and c.get("value") for c in jar):
            pairs = tuple((str(c["name"]), str(c.get("value", ""))) for c in jar)
            return Harvest(pairs, user_agent)
        if job.cancelled.is_set():
            raise BrowserUnavailable("the browser was stopped: its caller gave up")
        if time.monotonic() >= deadline:
            raise BrowserUnavailable(_too_late(job))
        page.wait_for_timeout(POLL_SECONDS * 1000)


class _Router:
    """Playwright's router for every request of the context: the policy's refusals and the
    resources a session does not need are aborted, the rest continues (to the guard proxy)."""

    def __init__(self, policy: EgressPolicy, error: type[Exception]) -> None:
        self._policy = policy
        self._error = error
        self.refusals = 0

    def handle(self, route: Any) -> None:
        request = route.request
        reason = self._policy.url_refusal(request.url)
        try:
            if reason is not None:
                self.refusals += 1
                if self.refusals <= LOGGED_REFUSALS:
                    log.info("browser request refused (%s): %s", reason, request.url[:200])
                route.abort("blockedbyclient")
            elif request.resource_type in _SKIPPED_RESOURCES:
                route.abort("blockedbyclient")
            else:
                route.continue_()
        except self._error as err:  # the page went away meanwhile
            log.debug("browser route not handled: %s", _line(err))


def _public_user_agent(browser: Any) -> str:
    """The browser's own User-Agent as a non-headless Chrome states it (public clients do the
    same; the clearance is bound to it, and the HTTP client sends it afterwards)."""
    cdp = browser.new_browser_cdp_session()
    try:
        agent = str(cdp.send("Browser.getVersion")["userAgent"])
    finally:
        cdp.detach()
    return agent.replace("HeadlessChrome", "Chrome")


def _network_args(proxy_url: str) -> list[str]:
    # The guard proxy for every host, loopback included, and no name resolved by Chromium
    # (it would otherwise prefetch DNS and could reach hosts the proxy never saw).
    return [
        f"--proxy-server={proxy_url}",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    ]


def _environment() -> dict[str, str | float | bool]:
    return {
        name: value
        for name, value in os.environ.items()
        if name in _ENVIRONMENT or name.startswith(_ENVIRONMENT_PREFIXES)
    }


@contextmanager
def _own_event_loop() -> Iterator[None]:
    """Playwright runs its own asyncio loop in this thread; with trio-asyncio loaded, a new
    loop would be a trio-asyncio one, so this thread gets asyncio's default policy (trio-asyncio
    keeps a policy per thread) for as long as Playwright runs."""
    if "trio_asyncio" not in sys.modules:
        yield
        return
    asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    try:
        yield
    finally:
        asyncio.set_event_loop_policy(None)


def _too_late(job: BrowserJob) -> str:
    return f"the browser got no session within {job.timeout:g} s"


def _ms(deadline: float) -> float:
    return max(1.0, (deadline - time.monotonic()) * 1000)


def _line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return (lines[0] if lines else type(err).__name__)[:200]
