"""`MarketClient`: the one polite, defensive HTTP client every marketplace request goes through.

One request budget per egress (every site sent through it shares it, as the marketplace
counts per IP address); per host (a site's `www` and API origins apart) a concurrency limit, a
circuit breaker, a "not before" instant (block windows, never undercut) and what operators see;
one session per site (`_site_sessions`: the plain warm-up, a real browser when the site
challenges, or an operator's), whose cookies and User-Agent go to the site's `www` origin and
whose token goes to its API origin. A browser challenge is never a block. robots.txt rules are
cached per origin actually fetched. Every URL passes the SSRF guard first; redirects are
followed by hand and only within the same origin.

The policies live beside it: the per-host and per-egress state in `_origin_state`, each
site's (its hosts' and every counter operators read) in `_site_state`, what each answer does
in `_status_policy` (challenges: `_challenge`), the redirect guard in `_redirects`, the
byte-capped reading of a body in `_reading`, sockets only to checked addresses in `_pinned`.
Here: the request loop (retries, backoff), one attempt's pacing, the session's cookies on each
request, the plain warm-up and robots.txt.
"""

from __future__ import annotations

import math
import random
from types import TracebackType
from typing import Any

import httpx
import trio

from ._breaker import BreakerState, CircuitBreaker
from ._call import CallPlan, egress_name, session_headers
from ._origin_state import Egress, OriginState, OriginStatus
from ._pinned import GuardedBackend, GuardedTransport
from ._ratelimit import TokenBucket
from ._reading import EnoughRead, MarketResponse, read_capped
from ._redirects import redirect_target
from ._retry import full_jitter
from ._robots_cache import RobotsCache
from ._sessions import MarketSession, session_from_cookies
from ._settings import ClientSettings
from ._site_sessions import BrowserSource, SessionReport, SessionVault, SiteSessions
from ._site_state import SiteState
from ._sites import SiteMap
from ._ssrf import NormalisedUrl, Resolver, check_catalogue_url, normalise_origin, system_resolver
from ._status_policy import Next, Progress, Refusal, judge
from .errors import (
    ChallengeRequired,
    MarketplaceError,
    MarketplaceTimeout,
    MarketplaceUnavailable,
    ParseError,
    RobotsDisallowed,
)


class _Transient(Exception):
    """An attempt failed in a way worth retrying (timeout, transport error)."""

    def __init__(self, error: MarketplaceError) -> None:
        super().__init__(str(error))
        self.error = error


class MarketClient:
    """Async context manager owning one `httpx.AsyncClient` (run on Trio through AnyIO).

    All methods raise `MarketplaceError` subclasses only (plus `trio.Cancelled`, which always
    propagates; a cancelled request leaves no half-claimed breaker probe or token behind).
    """

    def __init__(
        self,
        settings: ClientSettings | None = None,
        *,
        resolver: Resolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        seed: int | None = None,
        browser: BrowserSource | None = None,
        vault: SessionVault | None = None,
        sites: SiteMap | None = None,
    ) -> None:
        """`browser` opens a site's session in a real browser when the site challenges plain
        clients; `vault` shares sessions between the nodes of a cluster (both optional);
        `sites` says where each site's API lives (default: `www.` -> `api.`)."""
        self.settings = settings or ClientSettings()
        self.sites = sites or SiteMap()
        self.allowed_origins = tuple(normalise_origin(o) for o in self.settings.extra_origins)
        self._resolver = resolver or system_resolver
        self._transport = transport
        self._rng = random.Random(seed)
        self._origins: dict[str, OriginState] = {}
        self._robots = RobotsCache(self.settings.robots_product, self.settings.robots_ttl)
        self._dns: dict[tuple[str, int], tuple[float, list[str]]] = {}
        self._http: httpx.AsyncClient | None = None
        self._rate_share = 1.0
        self._egress: Egress | None = None
        self._sites: dict[str, SiteState] = {}
        self.sessions = SiteSessions(
            warm_up=self._plain_warm_up,
            browser=browser,
            vault=vault,
            allowed_origins=self.allowed_origins,
        )

    async def __aenter__(self) -> MarketClient:
        s = self.settings
        limits = httpx.Limits(max_connections=max(10, s.concurrency * 4))
        # Sockets open only to addresses the SSRF guard accepts (`_pinned`); tests may bring
        # a transport of their own.
        transport = self._transport or self._default_transport(limits)
        self._http = httpx.AsyncClient(
            follow_redirects=False,  # redirects are checked and followed by hand
            timeout=httpx.Timeout(s.request_timeout, connect=s.connect_timeout),
            headers={"User-Agent": s.user_agent, "Accept-Language": "en", **dict(s.extra_headers)},
            transport=transport,
            trust_env=False,  # no proxy from the environment may reroute guarded requests
        )
        await self._http.__aenter__()
        return self

    def _default_transport(self, limits: httpx.Limits) -> httpx.AsyncBaseTransport:
        if self.settings.proxy:
            # Through the operator's egress proxy the proxy resolves and connects, so only
            # the URL check (`check_url`, DNS included) guards the target, not the socket.
            return httpx.AsyncHTTPTransport(
                proxy=httpx.Proxy(self.settings.proxy), limits=limits, trust_env=False
            )
        return GuardedTransport(GuardedBackend(self._cached_resolve, self.allowed_origins), limits)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        http, self._http = self._http, None
        if http is not None:
            with trio.CancelScope(shield=True):  # closing sockets must finish even when cancelled
                await http.aclose()

    # -- state visible to callers ------------------------------------------------------------

    @property
    def egress(self) -> Egress:
        """The one way out this client sends through (direct, or the operator's proxy)."""
        if self._egress is None:
            self._egress = Egress(
                egress_name(self.settings.proxy),
                TokenBucket(self._shared_rate(), self.settings.burst),
            )
        return self._egress

    def _origin(self, origin: str) -> OriginState:
        state = self._origins.get(origin)
        if state is None:
            s = self.settings
            state = OriginState(
                breaker=CircuitBreaker(origin, s.breaker_threshold, s.breaker_reset),
                egress=self.egress,
                limiter=trio.CapacityLimiter(max(1, s.concurrency)),
            )
            self._origins[origin] = state
        return state

    def share_rate(self, nodes: int) -> None:
        """Cluster mode: `nodes` clients share the egress budget, so each takes its part
        (three nodes never poll faster than one). A rate already slowed by a 429 stays slow."""
        self._rate_share = 1.0 / max(1, nodes)
        self.egress.bucket.reconfigure(self._shared_rate())

    def _shared_rate(self) -> float:
        rate = self.settings.rate
        return rate if rate <= 0 or math.isinf(rate) else rate * self._rate_share

    def site_state(self, site: str) -> SiteState:
        """Everything this node knows of `site` (a site origin), its hosts' state included:
        the one place its counters live (`_site_state`)."""
        key = site.rstrip("/")
        state = self._sites.get(key)
        if state is None:
            where = self.sites.site(key)
            www, api = self._origin(where.origin), self._origin(where.api_origin)
            state = self._sites[key] = SiteState(where, www=www, api=api)
        return state

    def origin_status(self, origin: str) -> OriginStatus:
        key = origin.rstrip("/")
        return self._origin(key).status(key)

    def known_sites(self) -> tuple[str, ...]:
        """Every site this client has sent requests for (what the operators' view lists)."""
        return tuple(origin for origin, state in self._sites.items() if state.requested)

    def session_report(self, site: str) -> SessionReport:
        return self.sessions.report(site.rstrip("/"))

    def use_session(self, session: MarketSession) -> None:
        """Use `session` for its site from now on (an operator's, pasted on this node)."""
        self.sessions.adopt(session)

    def breaker_state(self, origin: str) -> BreakerState:
        return self.origin_status(origin).breaker

    # -- public requests -----------------------------------------------------------------------

    async def check_url(self, url: str) -> NormalisedUrl:
        """The SSRF guard with this client's allowlist and a small DNS cache; `UrlRefused`."""
        return await check_catalogue_url(url, self.allowed_origins, resolver=self._cached_resolve)

    async def get(
        self,
        url: str,
        *,
        api: bool = False,
        site: str | None = None,
        headers: tuple[tuple[str, str], ...] = (),
        refusal: Refusal | None = None,
        enough: EnoughRead | None = None,
    ) -> MarketResponse:
        """GET `url` politely; a 2xx `MarketResponse` or a `MarketplaceError`.

        `site` names the marketplace site whose session the request carries (default: the
        URL's own origin; an API origin passes its site); the breaker and windows are the URL's
        host's, the budget the egress's. `api=True` gets the site a session first (the vault,
        the plain warm-up, or a browser: `NoSession` when none can be had) and sends the bearer
        token and anon id; a 401 `invalid_authentication_token` or a challenge seeks another
        session once, then retries. `headers` are
        sent as given (a wire profile's). A 403 for which `refusal` says True raises
        `EndpointRefused` and leaves the site's breaker and windows alone. With `enough`, the
        body is read only until it says so (the content then holds what was read).
        """
        target = await self.check_url(url)
        site_target = target if site is None else await self.check_url(site.rstrip("/") + "/")
        self.site_state(site_target.origin).requested = True
        state = self._origin(target.origin)
        if self.settings.respect_robots and not await self._robots.allows(
            target, self._read_robots
        ):
            raise RobotsDisallowed(target.url)
        if api and self.sessions.current(site_target.origin) is None:
            await self.sessions.obtain(site_target.origin, stale=None)
        call = CallPlan(api=api, headers=headers, refusal=refusal, enough=enough, site=site_target)
        return await self._request(state, target, call)

    async def get_json(self, url: str) -> Any:
        return (await self.get(url, api=True)).json()

    async def get_text(self, url: str) -> str:
        return (await self.get(url)).text

    # -- internals -------------------------------------------------------------------------------

    async def _cached_resolve(self, host: str, port: int) -> list[str]:
        now = trio.current_time()
        hit = self._dns.get((host, port))
        if hit is not None and hit[0] > now:
            return hit[1]
        addresses = await self._resolver(host, port)
        self._dns[(host, port)] = (now + self.settings.dns_cache_ttl, addresses)
        return addresses

    async def _read_robots(self, robots: NormalisedUrl) -> MarketResponse:
        """robots.txt of `robots.origin`, with the site's session when there is one (never
        seeking one: behind a challenge it is "unavailable")."""
        call = CallPlan(site=robots, seek_session=False)
        return await self._request(self._origin(robots.origin), robots, call)

    async def _plain_warm_up(self, site: str) -> MarketSession:
        """`GET /` on the site for its session cookies, as a plain client (a challenge
        raises `ChallengeRequired`; `_site_sessions` decides what comes next)."""
        target = await self.check_url(site + "/")
        home = NormalisedUrl(
            target.join("/"), target.origin, target.scheme, target.host, target.port, "/"
        )
        call = CallPlan(site=target, seek_session=False, plain=True)
        response = await self._request(self._origin(target.origin), home, call)
        if not response.cookies.get("access_token_web"):
            raise ParseError("session warm-up", "no access_token_web cookie was set")
        return session_from_cookies(
            target.origin, response.cookies.items(), source="warmup", require_jwt=False
        )

    async def _request(
        self, state: OriginState, target: NormalisedUrl, call: CallPlan
    ) -> MarketResponse:
        """Send until an answer settles it (`_status_policy` says what each status does).
        Transport errors and 5xx answers count as breaker failures and are retried after a
        full-jitter backoff, at most `max_retries` times; timeouts are never retried."""
        s = self.settings
        progress = Progress(current=target)
        while True:
            failure: MarketplaceError
            session_used = self.sessions.current(call.site.origin)
            if session_used is not None and call.seek_session and session_used.due():
                session_used = await self.sessions.obtain(call.site.origin, stale=session_used)
            try:
                response = await self._send_once(state, progress.current, call, session_used)
            except _Transient as transient:
                failure = transient.error
                if isinstance(failure, MarketplaceTimeout):
                    # Not retried: a marketplace that did not answer in `request_timeout` is
                    # unlikely to in the next one, and retries would keep a poll silent for
                    # minutes. The call fails now; the caller's next poll is the retry.
                    state.breaker.record_failure()
                    raise failure from None
            else:
                verdict = judge(
                    state, response, progress,
                    api=call.api, refusal=call.refusal, settings=s, rng=self._rng,
                )  # fmt: skip
                if verdict is Next.DONE:
                    return response
                if verdict is Next.REDIRECT:
                    progress.current = await redirect_target(
                        progress.current, response, progress.redirects,
                        max_redirects=s.max_redirects, check=self.check_url,
                    )  # fmt: skip
                    progress.redirects += 1
                    continue
                if verdict in (Next.REWARM, Next.CHALLENGE):
                    await self._seek_session(verdict, call, progress, session_used, response)
                    continue
                if verdict is Next.AGAIN:
                    continue
                failure = verdict
            state.breaker.record_failure()
            progress.attempt += 1
            if progress.attempt > s.max_retries:
                raise failure
            delay = full_jitter(progress.attempt - 1, s.backoff_base, s.backoff_cap, self._rng)
            await trio.sleep(delay)

    async def _seek_session(
        self,
        verdict: Next,
        call: CallPlan,
        progress: Progress,
        held: MarketSession | None,
        response: MarketResponse,
    ) -> None:
        """Another session after a 401 (`REWARM`) or a challenge, else the request fails
        (`ChallengeRequired`, `NoSession`)."""
        if verdict is Next.REWARM:
            await self.sessions.obtain(call.site.origin, stale=held, why="unauthorised")
            return
        # The site wants a browser session: seek one once per request (the plain warm-up and
        # robots.txt never do: they are how we learn it is challenged).
        if not call.seek_session or progress.challenged:
            raise ChallengeRequired(progress.current.url, response.status)
        progress.challenged = True
        await self.sessions.obtain(call.site.origin, stale=held, why="challenged")

    async def _send_once(
        self,
        state: OriginState,
        target: NormalisedUrl,
        call: CallPlan,
        session: MarketSession | None,
    ) -> MarketResponse:
        s = self.settings
        await state.wait_window(target.origin, s.max_retry_wait)
        probe = state.breaker.before_request()
        verdict = False
        try:
            async with state.limiter:
                await state.bucket.take()
                await state.wait_window(target.origin, s.max_retry_wait)
                headers = {"Accept": "application/json" if call.api else "text/html,*/*"}
                headers.update(call.headers)
                if session is not None and not call.plain:
                    headers.update(session_headers(session, target, call))
                state.note_sent()
                try:
                    with trio.fail_after(s.request_timeout):
                        response = await self._transfer(target.url, headers, call.enough)
                except (trio.TooSlowError, httpx.TimeoutException) as err:
                    raise _Transient(MarketplaceTimeout(target.url, s.request_timeout)) from err
                except httpx.HTTPError as err:
                    raise _Transient(
                        MarketplaceUnavailable(target.url, f"{type(err).__name__}: {err}")
                    ) from err
                verdict = True
                return response
        finally:
            if probe and not verdict:
                state.breaker.release_probe()

    async def _transfer(
        self, url: str, headers: dict[str, str], enough: EnoughRead | None = None
    ) -> MarketResponse:
        if self._http is None:
            raise RuntimeError("MarketClient used outside `async with`")
        return await read_capped(self._http, url, headers, self.settings.max_bytes, enough)
