"""`MarketClient`: the one polite, defensive HTTP client every marketplace request goes through.

Per marketplace site it keeps a token bucket (rate, burst), a concurrency limit, a circuit
breaker, a "not before" instant (Retry-After and block windows, never undercut), the warmed-up
session (anon id + bearer token) and what operators see (requests in the last hour, last success,
last block). A site's API origin (`api.vinted.<tld>`) shares its site's state: one marketplace,
one budget, one session. robots.txt rules are cached per origin actually fetched. Every URL
passes the SSRF guard first; redirects are followed by hand and only within the same origin.

The policies live beside it: the per-site state and its windows in `_origin_state`, what each
answer status does in `_status_policy`, the redirect guard in `_redirects`, the byte-capped
reading of a body in `_reading`, sockets only to checked addresses in `_pinned`. Here: the
request loop (retries, backoff), one attempt's pacing, the session warm-up and robots.txt.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import httpx
import trio

from ._breaker import BreakerState, CircuitBreaker
from ._origin_state import OriginState, OriginStatus
from ._pinned import GuardedBackend, GuardedTransport
from ._ratelimit import TokenBucket
from ._reading import EnoughRead, MarketResponse, read_capped
from ._redirects import redirect_target
from ._retry import full_jitter
from ._robots import RobotsRules
from ._settings import ClientSettings
from ._ssrf import NormalisedUrl, Resolver, check_catalogue_url, normalise_origin, system_resolver
from ._status_policy import Next, Progress, Refusal, judge
from .errors import (
    HttpStatusError,
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


@dataclass
class _Robots:
    rules: RobotsRules | None = None
    at: float = 0.0
    lock: trio.Lock = field(default_factory=trio.Lock)


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
    ) -> None:
        self.settings = settings or ClientSettings()
        self.allowed_origins = tuple(normalise_origin(o) for o in self.settings.extra_origins)
        self._resolver = resolver or system_resolver
        self._transport = transport
        self._rng = random.Random(seed)
        self._origins: dict[str, OriginState] = {}
        self._robots: dict[str, _Robots] = {}
        self._dns: dict[tuple[str, int], tuple[float, list[str]]] = {}
        self._http: httpx.AsyncClient | None = None
        self._rate_share = 1.0

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

    def _origin(self, origin: str) -> OriginState:
        state = self._origins.get(origin)
        if state is None:
            s = self.settings
            state = OriginState(
                breaker=CircuitBreaker(origin, s.breaker_threshold, s.breaker_reset),
                bucket=TokenBucket(self._shared_rate(), s.burst),
                limiter=trio.CapacityLimiter(max(1, s.concurrency)),
            )
            self._origins[origin] = state
        return state

    def share_rate(self, nodes: int) -> None:
        """Cluster mode: `nodes` clients share each origin's budget, so each takes its part
        (three nodes never poll faster than one). Rates already slowed by a 429 stay slow."""
        self._rate_share = 1.0 / max(1, nodes)
        for state in self._origins.values():
            state.bucket.reconfigure(self._shared_rate())

    def _shared_rate(self) -> float:
        rate = self.settings.rate
        return rate if rate <= 0 or math.isinf(rate) else rate * self._rate_share

    def origin_status(self, origin: str) -> OriginStatus:
        key = origin.rstrip("/")
        return self._origin(key).status(key)

    def known_origins(self) -> tuple[str, ...]:
        """Every site this client has sent requests for (what the operators' view lists)."""
        return tuple(self._origins)

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

        `site` names the marketplace site whose budget, breaker and session the request uses
        (default: the URL's own origin; an API origin passes its site). `api=True` warms the
        site's session up first (`GET /` on the site) and sends the bearer token and anon id;
        one 401 `invalid_authentication_token` triggers one re-warm and retry. `headers` are
        sent as given (a wire profile's). A 403 for which `refusal` says True raises
        `EndpointRefused` and leaves the site's breaker and windows alone. With `enough`, the
        body is read only until it says so (the content then holds what was read).
        """
        target = await self.check_url(url)
        site_target = target if site is None else await self.check_url(site.rstrip("/") + "/")
        state = self._origin(site_target.origin)
        if self.settings.respect_robots and not await self._robots_allow(state, target):
            raise RobotsDisallowed(target.url)
        if api and state.token is None:
            await self._warm(state, site_target, stale=None)
        call = _Call(api=api, headers=headers, refusal=refusal, enough=enough, site=site_target)
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

    async def _robots_allow(self, state: OriginState, target: NormalisedUrl) -> bool:
        robots = self._robots.setdefault(target.origin, _Robots())
        async with robots.lock:
            now = trio.current_time()
            if robots.rules is None or now - robots.at > self.settings.robots_ttl:
                robots_url = target.join("/robots.txt")
                robots_target = NormalisedUrl(
                    robots_url, target.origin, target.scheme, target.host, target.port,
                    "/robots.txt",
                )  # fmt: skip
                product = self.settings.robots_product
                # Unreachable (MarketplaceUnavailable, MarketplaceTimeout): nothing is fetched,
                # as RFC 9309 asks, and the call fails with that true reason; nothing is
                # remembered either, so the next call asks again (a remembered "disallow all"
                # kept polls failing for an hour after the marketplace came back).
                try:
                    response = await self._request(state, robots_target, _Call(site=target))
                    rules = RobotsRules.for_status(response.status, response.text, product)
                except HttpStatusError as err:
                    rules = RobotsRules.for_status(err.status, "", product)
                robots.rules, robots.at = rules, trio.current_time()
            assert robots.rules is not None
            return robots.rules.can_fetch(target.target)

    async def _warm(self, state: OriginState, target: NormalisedUrl, stale: str | None) -> None:
        """Fetch `/` for fresh cookies, once even when many requests ask at the same time."""
        async with state.session_lock:
            if state.token is not None and state.token != stale:
                return  # another task re-warmed while we waited
            home = NormalisedUrl(
                target.join("/"), target.origin, target.scheme, target.host, target.port, "/"
            )
            response = await self._request(state, home, _Call(site=target))
            token = response.cookies.get("access_token_web")
            if not token:
                raise ParseError("session warm-up", "no access_token_web cookie was set")
            state.token = token
            state.anon_id = response.cookies.get("anon_id")

    async def _request(
        self, state: OriginState, target: NormalisedUrl, call: _Call
    ) -> MarketResponse:
        """Send until an answer settles it (`_status_policy` says what each status does).
        Transport errors and 5xx answers count as breaker failures and are retried after a
        full-jitter backoff, at most `max_retries` times; timeouts are never retried."""
        s = self.settings
        progress = Progress(current=target)
        while True:
            failure: MarketplaceError
            token_used = state.token
            try:
                response = await self._send_once(state, progress.current, call)
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
                if verdict is Next.REWARM:
                    await self._warm(state, call.site, stale=token_used)
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

    async def _send_once(
        self, state: OriginState, target: NormalisedUrl, call: _Call
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
                if call.api and state.token:
                    headers["Authorization"] = f"Bearer {state.token}"
                    if state.anon_id:
                        headers["X-Anon-Id"] = state.anon_id
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


@dataclass(frozen=True, slots=True)
class _Call:
    """How one logical request is made (the same for every attempt and redirect)."""

    site: NormalisedUrl  # whose session a re-warm refreshes
    api: bool = False
    headers: tuple[tuple[str, str], ...] = ()
    refusal: Refusal | None = None
    enough: EnoughRead | None = None
