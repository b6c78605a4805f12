"""Marketplace sessions from a real headless browser.

Since 13 September 2026 the site's `www` origin may hand its session only to a real browser
(MARKETPLACE.md): its challenge page sets `cf_clearance` by script and reloads, then the home
page sets `access_token_web` and `anon_id`. `BrowserSessions.open_session` opens the home page
in a fresh headless Chromium, waits for the token cookie and hands every cookie of the site over
as a `MarketSession`, with the User-Agent the clearance is bound to; the HTTP client does the
rest. The browser is optional: without it (`NICHESCOPE_MARKET_BROWSER=off`, no chromium, no
`playwright`) every call raises `BrowserUnavailable` saying why.

The browser runs whatever the marketplace serves, so it only reaches what `_browser_egress`
allows, checked by Playwright's router and by a guard proxy (`_browser_proxy`) that sees every
connection, redirects included; through the operator's egress proxy when there is one, so that
the clearance is earned from the address the HTTP client uses.

Residual risks, stated: the renderer runs without Chromium's sandbox (as Playwright runs it by
default: as root or in most containers it cannot start with one), so an exploit of the browser
itself would escape the checks above; a page may still
spend the session's time and memory (bounded by `launch_timeout` and one launch at a time).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import trio

from ._browser_driver import BrowserJob, Harvest, run_job
from ._browser_egress import EgressPolicy
from ._browser_proxy import GuardProxy
from ._browser_upstream import Upstream
from ._sessions import (
    ANON_COOKIE,
    MAX_COOKIE_BYTES,
    MAX_COOKIES,
    TOKEN_COOKIE,
    MarketSession,
    SessionRefused,
    parse_cookie_text,
    session_from_cookies,
)
from .errors import BrowserUnavailable

BROWSER_ENV = "NICHESCOPE_MARKET_BROWSER"
# Once the session's time is up, how long its thread gets to close the browser before the
# caller stops waiting for it (the thread still closes it, later).
CLOSE_GRACE = 15.0
# Kept first when a site sets more cookies than a session carries.
_ESSENTIAL_COOKIES = (TOKEN_COOKIE, ANON_COOKIE, "cf_clearance", "__cf_bm")


def find_browser(mode: str) -> str | None:
    """The Chromium executable `mode` names. "off": None. "auto": Debian's `chromium` on the
    PATH, else Playwright's own downloaded chromium when it is on disk, else None (nothing is
    ever downloaded). An absolute path: that path. `ValueError` naming NICHESCOPE_MARKET_BROWSER
    for any other value, and for a path that is not an executable file."""
    keyword = mode.strip().lower()
    if keyword == "off":
        return None
    if keyword == "auto":
        return shutil.which("chromium") or _playwright_chromium()
    if not os.path.isabs(mode):
        raise ValueError(
            f"{BROWSER_ENV} must be auto, off or the absolute path of a Chromium executable"
        )
    if not (os.path.isfile(mode) and os.access(mode, os.X_OK)):
        raise ValueError(f"{BROWSER_ENV}: {mode} is not an executable file")
    return mode


@dataclass(frozen=True, slots=True)
class BrowserSettings:
    """How sessions are had from a browser. `mode`: "auto", "off" or the absolute path of a
    Chromium executable (see `find_browser`); `launch_timeout`: seconds for a whole session
    (launch, page, cookie); `proxy`: the operator's egress proxy, which the browser uses too.
    `ValueError` for a bad value, naming its variable (never echoing the proxy's URL)."""

    mode: str = "auto"
    launch_timeout: float = 45.0
    proxy: str | None = field(default=None, repr=False)  # may carry credentials

    def __post_init__(self) -> None:
        if self.mode.strip().lower() not in ("auto", "off"):
            find_browser(self.mode)
        if not (self.launch_timeout > 0 and math.isfinite(self.launch_timeout)):
            raise ValueError("the browser's launch timeout must be a positive number of seconds")
        if self.proxy:
            Upstream.parse(self.proxy)


class BrowserSessions:
    """Sessions from a real headless Chromium, one launch at a time: share one instance per
    node (the lock is the instance's)."""

    def __init__(self, settings: BrowserSettings | None = None) -> None:
        self.settings = settings or BrowserSettings()
        self._upstream = Upstream.parse(self.settings.proxy) if self.settings.proxy else None
        self._lock = trio.Lock()
        self.launches = 0  # browsers started by this instance

    async def open_session(
        self, site_origin: str, *, allowed_origins: tuple[str, ...]
    ) -> MarketSession:
        """Open `site_origin + "/"` in a fresh browser and return the site's session once it
        holds an `access_token_web` cookie (every cookie of the site, the browser's
        User-Agent, the JWT's `exp` when the token is one). The page may reach the site,
        `allowed_origins` and public https hosts only.

        Waits for any launch in progress first. On error, `BrowserUnavailable` with one line
        naming the cause (none configured or found, failed to start, no session within
        `launch_timeout`, ...); never anything else. On cancellation the browser is told to
        stop and the call waits (shielded, at most `CLOSE_GRACE` s) for it to close, then
        `Cancelled` propagates.
        """
        executable = self._executable()
        site = site_origin.rstrip("/")
        try:
            policy = EgressPolicy.for_site(site, allowed_origins)
        except ValueError as err:
            raise BrowserUnavailable(f"not an origin a browser may open: {err}") from None
        async with self._lock:
            self.launches += 1
            outcome = await self._session(executable, site, policy)
        if isinstance(outcome, BrowserUnavailable):
            raise outcome
        return _market_session(site, outcome)

    def _executable(self) -> str:
        mode = self.settings.mode
        if mode.strip().lower() == "off":
            raise BrowserUnavailable(f"no browser configured ({BROWSER_ENV}=off)")
        try:
            executable = find_browser(mode)
        except ValueError as err:  # the file went away since the settings were read
            raise BrowserUnavailable(str(err)) from None
        if executable is None:
            raise BrowserUnavailable(
                f"no chromium found: install it or set {BROWSER_ENV} to its path"
            )
        return executable

    async def _session(
        self, executable: str, site: str, policy: EgressPolicy
    ) -> Harvest | BrowserUnavailable:
        """The browser's harvest, or why there is none; only `Cancelled` is raised."""
        guard = GuardProxy(policy, self._upstream)
        async with trio.open_nursery() as nursery:
            try:
                proxy_url = await nursery.start(guard.serve)
            except OSError as err:
                return BrowserUnavailable(f"the browser's guard proxy failed to start: {err}")
            job = BrowserJob(
                executable=executable,
                site=site,
                policy=policy,
                proxy_url=proxy_url,
                timeout=self.settings.launch_timeout,
                closed=trio.Event(),
                token=trio.lowlevel.current_trio_token(),
            )
            try:
                return await _in_thread(job)
            finally:
                nursery.cancel_scope.cancel()


async def _in_thread(job: BrowserJob) -> Harvest | BrowserUnavailable:
    """`run_job` in a worker thread. The thread bounds itself by `job.timeout`; should it
    outlive that by `CLOSE_GRACE`, or should the caller be cancelled, it is told to stop and
    waited for (shielded, at most `CLOSE_GRACE` s) so that the browser is gone before the lock
    passes to the next launch."""
    try:
        with trio.move_on_after(job.timeout + CLOSE_GRACE):
            return await trio.to_thread.run_sync(run_job, job, abandon_on_cancel=True)
        return BrowserUnavailable(f"the browser did not finish within {job.timeout:g} s")
    finally:
        if not job.closed.is_set():
            job.cancelled.set()
            with trio.CancelScope(shield=True) as grace:
                grace.deadline = trio.current_time() + CLOSE_GRACE
                await job.closed.wait()


def _market_session(site: str, harvest: Harvest) -> MarketSession:
    try:
        return session_from_cookies(
            site,
            _usable_cookies(harvest.cookies),
            source="browser",
            user_agent=harvest.user_agent,
            require_jwt=False,
        )
    except SessionRefused as err:
        raise BrowserUnavailable(f"the browser's session is unusable: {err.reason}") from None


def _usable_cookies(cookies: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """The cookies a session may carry: names and values that cannot smuggle anything into
    a header, the essential ones first, within the session's count and size limits."""
    ranked = sorted(
        cookies, key=lambda c: _ESSENTIAL_COOKIES.index(c[0]) if c[0] in _ESSENTIAL_COOKIES else 9
    )
    kept: list[tuple[str, str]] = []
    size = 0
    for name, value in ranked:
        try:
            parse_cookie_text(f"{name}={value}")
        except SessionRefused:
            continue
        size += len(name) + len(value) + 2
        if len(kept) >= MAX_COOKIES or size > MAX_COOKIE_BYTES:
            break
        kept.append((name, value))
    return kept


def _playwright_chromium() -> str | None:
    """Playwright's own chromium, if it was downloaded (`playwright install chromium`)."""
    spec = importlib.util.find_spec("playwright")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations))) / "driver" / "package"
    try:
        listed = json.loads((package / "browsers.json").read_text())["browsers"]
        revision = next(b["revision"] for b in listed if b["name"] == "chromium")
    except (OSError, ValueError, KeyError, TypeError, StopIteration):
        return None
    configured = os.environ.get("PLAYWRIGHT_BROWSERS_PATH")
    if configured == "0":
        root = package / ".local-browsers"
    elif configured:
        root = Path(configured)
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ms-playwright"
    for folder in ("chrome-linux64", "chrome-linux", "chrome-linux-arm64"):
        candidate = root / f"chromium-{revision}" / folder / "chrome"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None
