"""One session per marketplace site, and where a new one comes from.

Policy, per site (MARKETPLACE.md, "Since 13 September 2026"):
1. The session in hand, while it is not due for renewal (`MarketSession.due`: ahead of the
   JWT's `exp`) and was not just refused (a 401, or a challenge on the cookies it carries).
2. The session shared through the vault (the database, sealed), when it is another one: a
   browser session another node of the cluster opened, or a session an operator pasted.
3. The plain warm-up (`GET /`), unless the site challenged a plain client in the last
   `CHALLENGE_MEMORY` seconds (it would only be challenged again).
4. A real browser, when one is configured and not backing off after a failure: one launch at
   a time per node (the browser source's own lock), its session shared through the vault.
5. Otherwise `NoSession`, with the reason in plain words. A session that is merely due for
   renewal is kept until it expires; one whose cookies the `www` origin challenged is kept
   too (its token still opens the API origin, which is never challenged); one refused with
   a 401 is dropped.
Everything is done under the site's lock, so many requests needing a session cause one
acquisition. Cancellation propagates; a browser already launched finishes in its thread.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

import trio

from ._sessions import MarketSession
from .errors import ChallengeRequired, MarketplaceError, NoSession

log = logging.getLogger(__name__)

# After a plain client was challenged, plain warm-ups are not tried for this long.
CHALLENGE_MEMORY = 600.0
# A browser that failed is tried again after 30 s, doubling up to an hour.
BROWSER_RETRY_FIRST = 30.0
BROWSER_RETRY_CAP = 3600.0
NO_BROWSER = (
    "the marketplace asks for a browser and none is configured: "
    "set NICHESCOPE_MARKET_BROWSER or paste a session"
)


class SessionVault(Protocol):
    """Where a site's session is shared with the other nodes (sealed at rest)."""

    async def load(self, site: str) -> MarketSession | None: ...

    async def save(self, session: MarketSession) -> None: ...


class BrowserSource(Protocol):
    """A real browser that opens a site's home page and hands over its session."""

    async def open_session(
        self, site_origin: str, *, allowed_origins: tuple[str, ...]
    ) -> MarketSession: ...


Why = Literal["due", "challenged", "unauthorised"]
"""Why a session is sought: the one held is due for renewal, its cookies were challenged on
the `www` origin, or a request with it was answered 401."""

WarmUp = Callable[[str], Awaitable[MarketSession]]
"""`warm_up(site)`: the plain warm-up; `ChallengeRequired` when the site challenges it."""


@dataclass
class SiteSession:
    """One site's session and how getting one has gone (what operators see)."""

    session: MarketSession | None = None
    lock: trio.Lock = field(default_factory=trio.Lock)
    challenged_at: float | None = None  # trio time a plain client was last challenged
    browser_failures: int = 0
    browser_retry_at: float = 0.0  # trio time
    last_error: str | None = None  # why the last acquisition failed (None once one worked)
    without_since: float | None = None  # Unix time since the site has had no working session
    renewals: int = 0

    def challenged(self) -> bool:
        return (
            self.challenged_at is not None
            and trio.current_time() - self.challenged_at < CHALLENGE_MEMORY
        )


@dataclass(frozen=True, slots=True)
class SessionReport:
    """What operators see of one site's session."""

    state: str  # "browser session until ...", "operator session until ...", "no session", ...
    source: str | None
    expires_at: float | None  # Unix seconds
    challenged: bool
    last_error: str | None
    without_since: float | None
    renewals: int
    browser: str  # "configured" or "off"


class SiteSessions:
    """Per-site sessions of one client (see the module doc)."""

    def __init__(
        self,
        *,
        warm_up: WarmUp,
        browser: BrowserSource | None = None,
        vault: SessionVault | None = None,
        allowed_origins: tuple[str, ...] = (),
    ) -> None:
        self._warm_up = warm_up
        self._browser = browser
        self._vault = vault
        self._allowed = allowed_origins
        self._sites: dict[str, SiteSession] = {}

    def site(self, site: str) -> SiteSession:
        return self._sites.setdefault(site, SiteSession())

    def current(self, site: str) -> MarketSession | None:
        return self.site(site).session

    def adopt(self, session: MarketSession) -> None:
        """Use `session` for its site from now on (an operator's, set on this node)."""
        self._use(self.site(session.site), session)

    async def obtain(
        self, site: str, *, stale: MarketSession | None, why: Why = "due"
    ) -> MarketSession:
        """A working session for `site` (see the module doc). `stale` is the session the
        caller holds and wants replaced (None: it holds none), `why` why it wants another.
        `NoSession` when none can be had."""
        state = self.site(site)
        async with state.lock:
            held = state.session
            if held is not None and not _same(held, stale) and not held.due():
                return held  # another task renewed it while we waited
            if stale is not None:
                state.renewals += 1
            shared = await self._shared(site, stale)
            if shared is not None:
                return self._use(state, shared)
            reason = await self._fresh(state, site)
            if isinstance(reason, MarketSession):
                return self._use(state, reason)
            if stale is not None and why == "due" and not stale.expired():
                return stale  # due for renewal but still good: keep it while it lasts
            if why != "challenged" or (held is not None and held.expired()):
                state.session = None
            state.last_error = reason
            if state.session is None and state.without_since is None:
                state.without_since = time.time()
            raise NoSession(site, reason)

    async def _shared(self, site: str, stale: MarketSession | None) -> MarketSession | None:
        if self._vault is None:
            return None
        try:
            shared = await self._vault.load(site)
        except Exception as err:  # the vault is a bonus: a database hiccup must not stop polls
            log.warning("market session of %s not read from the vault: %s", site, err)
            return None
        if shared is None or _same(shared, stale) or shared.due():
            return None
        return shared

    async def _fresh(self, state: SiteSession, site: str) -> MarketSession | str:
        """A new session from the plain warm-up or the browser, else why there is none."""
        if not state.challenged():
            try:
                return await self._warm_up(site)
            except ChallengeRequired:
                state.challenged_at = trio.current_time()
        if self._browser is None:
            return NO_BROWSER
        now = trio.current_time()
        if now < state.browser_retry_at:
            wait = math.ceil(state.browser_retry_at - now)
            return f"{state.last_error or 'the browser failed'}; next try in {wait} s"
        try:
            session = await self._browser.open_session(site, allowed_origins=self._allowed)
        except MarketplaceError as err:
            state.browser_failures += 1
            backoff = BROWSER_RETRY_FIRST * 2 ** (state.browser_failures - 1)
            state.browser_retry_at = now + min(BROWSER_RETRY_CAP, backoff)
            log.warning("browser session for %s failed: %s", site, err)
            return f"the marketplace asks for a browser and the browser failed: {err}"
        state.browser_failures = 0
        await self._save(session)
        return session

    async def _save(self, session: MarketSession) -> None:
        if self._vault is None:
            return
        try:
            await self._vault.save(session)
        except Exception as err:  # shared later, or never: this node still has it
            log.warning("market session of %s not shared: %s", session.site, err)

    @staticmethod
    def _use(state: SiteSession, session: MarketSession) -> MarketSession:
        state.session = session
        state.last_error = None
        state.without_since = None
        return session

    def report(self, site: str) -> SessionReport:
        state = self.site(site)
        session = state.session
        if session is not None and not session.expired():
            until = _iso(session.expires_at) if session.expires_at else "its token expires"
            words = f"{session.source} session until {until}"
        elif state.challenged():
            words = "challenged, no session"
        else:
            words = "no session"
        return SessionReport(
            state=words,
            source=session.source if session else None,
            expires_at=session.expires_at if session else None,
            challenged=state.challenged(),
            last_error=state.last_error,
            without_since=state.without_since,
            renewals=state.renewals,
            browser="configured" if self._browser is not None else "off",
        )

    def sites(self) -> tuple[str, ...]:
        return tuple(self._sites)


def _same(a: MarketSession, b: MarketSession | None) -> bool:
    return b is not None and a.token == b.token and a.cookies == b.cookies


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
