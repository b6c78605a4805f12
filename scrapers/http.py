"""`MarketClient`: the one polite, defensive HTTP client every marketplace request goes through.

Per origin it keeps a token bucket (rate, burst), a concurrency limit, a circuit breaker, a
"not before" instant (Retry-After and block windows, never undercut), the warmed-up session
(anon id + bearer token) and the cached robots.txt rules. Every URL passes the SSRF guard first;
redirects are followed by hand and only within the same origin.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import urljoin

import httpx
import trio

from ._breaker import BreakerState, CircuitBreaker
from ._pinned import GuardedBackend, GuardedTransport
from ._ratelimit import TokenBucket
from ._retry import full_jitter, parse_retry_after
from ._robots import RobotsRules
from ._settings import ClientSettings
from ._ssrf import NormalisedUrl, Resolver, check_catalogue_url, normalise_origin, system_resolver
from .errors import (
    Blocked,
    HttpStatusError,
    MarketplaceError,
    MarketplaceTimeout,
    MarketplaceUnavailable,
    ParseError,
    RateLimited,
    ResponseTooLarge,
    RobotsDisallowed,
    UrlRefused,
)

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True, slots=True)
class MarketResponse:
    """A fully read answer (body within the size cap)."""

    url: str
    status: int
    headers: dict[str, str]
    cookies: dict[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The decoded JSON body; `ParseError` (never `ValueError`) when it is not JSON."""
        try:
            return json.loads(self.content)
        except (ValueError, UnicodeDecodeError) as err:
            raise ParseError(f"JSON from {self.url[:200]}", str(err)) from err


@dataclass(frozen=True, slots=True)
class OriginStatus:
    """What a caller may want to show about one origin."""

    origin: str
    breaker: BreakerState
    consecutive_failures: int
    blocked_for: float  # seconds until requests may go out again (Retry-After / block window)
    has_session: bool


class _Transient(Exception):
    """An attempt failed in a way worth retrying (timeout, transport error)."""

    def __init__(self, error: MarketplaceError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class _Origin:
    breaker: CircuitBreaker
    bucket: TokenBucket
    limiter: trio.CapacityLimiter
    not_before: float = 0.0
    anon_id: str | None = None
    token: str | None = None
    session_lock: trio.Lock = field(default_factory=trio.Lock)
    robots: RobotsRules | None = None
    robots_at: float = 0.0
    robots_lock: trio.Lock = field(default_factory=trio.Lock)


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
        self._origins: dict[str, _Origin] = {}
        self._dns: dict[tuple[str, int], tuple[float, list[str]]] = {}
        self._http: httpx.AsyncClient | None = None
        self._rate_share = 1.0

    async def __aenter__(self) -> MarketClient:
        s = self.settings
        limits = httpx.Limits(max_connections=max(10, s.concurrency * 4))
        # Sockets open only to addresses the SSRF guard accepts (`_pinned`); tests may bring
        # a transport of their own.
        transport = self._transport or GuardedTransport(
            GuardedBackend(self._cached_resolve, self.allowed_origins), limits
        )
        self._http = httpx.AsyncClient(
            follow_redirects=False,  # redirects are checked and followed by hand
            timeout=httpx.Timeout(s.request_timeout, connect=s.connect_timeout),
            headers={"User-Agent": s.user_agent, "Accept-Language": "en", **dict(s.extra_headers)},
            transport=transport,
            trust_env=False,  # no proxy from the environment may reroute guarded requests
        )
        await self._http.__aenter__()
        return self

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

    def _origin(self, origin: str) -> _Origin:
        state = self._origins.get(origin)
        if state is None:
            s = self.settings
            state = _Origin(
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
        state = self._origin(key)
        return OriginStatus(
            origin=key,
            breaker=state.breaker.state,
            consecutive_failures=state.breaker.failures,
            blocked_for=max(0.0, state.not_before - trio.current_time()),
            has_session=state.token is not None,
        )

    def breaker_state(self, origin: str) -> BreakerState:
        return self.origin_status(origin).breaker

    # -- public requests -----------------------------------------------------------------------

    async def check_url(self, url: str) -> NormalisedUrl:
        """The SSRF guard with this client's allowlist and a small DNS cache; `UrlRefused`."""
        return await check_catalogue_url(url, self.allowed_origins, resolver=self._cached_resolve)

    async def get(self, url: str, *, api: bool = False) -> MarketResponse:
        """GET `url` politely; a 2xx `MarketResponse` or a `MarketplaceError`.

        `api=True` warms the session up first and sends the bearer token and anon id; one 401
        `invalid_authentication_token` triggers one re-warm and retry.
        """
        target = await self.check_url(url)
        state = self._origin(target.origin)
        if self.settings.respect_robots and not await self._robots_allow(state, target):
            raise RobotsDisallowed(target.url)
        if api and state.token is None:
            await self._warm(state, target, stale=None)
        return await self._request(state, target, api=api)

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

    async def _robots_allow(self, state: _Origin, target: NormalisedUrl) -> bool:
        async with state.robots_lock:
            now = trio.current_time()
            if state.robots is None or now - state.robots_at > self.settings.robots_ttl:
                robots_url = target.join("/robots.txt")
                robots_target = NormalisedUrl(
                    robots_url, target.origin, target.scheme, target.host, target.port,
                    "/robots.txt",
                )  # fmt: skip
                product = self.settings.robots_product
                try:
                    response = await self._request(state, robots_target, api=False)
                    state.robots = RobotsRules.for_status(response.status, response.text, product)
                except HttpStatusError as err:
                    state.robots = RobotsRules.for_status(err.status, "", product)
                except (MarketplaceUnavailable, MarketplaceTimeout):
                    state.robots = RobotsRules.disallowing_all()  # unreachable: assume disallowed
                state.robots_at = trio.current_time()
            return state.robots.can_fetch(target.target)

    async def _warm(self, state: _Origin, target: NormalisedUrl, stale: str | None) -> None:
        """Fetch `/` for fresh cookies, once even when many requests ask at the same time."""
        async with state.session_lock:
            if state.token is not None and state.token != stale:
                return  # another task re-warmed while we waited
            home = NormalisedUrl(
                target.join("/"), target.origin, target.scheme, target.host, target.port, "/"
            )
            response = await self._request(state, home, api=False)
            token = response.cookies.get("access_token_web")
            if not token:
                raise ParseError("session warm-up", "no access_token_web cookie was set")
            state.token = token
            state.anon_id = response.cookies.get("anon_id")

    async def _request(self, state: _Origin, target: NormalisedUrl, *, api: bool) -> MarketResponse:
        s = self.settings
        attempt = 0
        redirects = 0
        rewarmed = False
        current = target
        while True:
            failure: MarketplaceError
            token_used = state.token
            try:
                response = await self._send_once(state, current, api=api)
            except _Transient as transient:
                failure = transient.error
            else:
                status = response.status
                if 200 <= status < 300:
                    state.breaker.record_success()
                    state.bucket.speed_up()
                    return response
                if status in _REDIRECTS:
                    state.breaker.record_success()
                    current = await self._redirect_target(current, response, redirects)
                    redirects += 1
                    continue
                if status == 401 and api and not rewarmed and _is_token_error(response):
                    state.breaker.record_success()  # the origin is healthy, our token is not
                    rewarmed = True
                    await self._warm(state, current, stale=token_used)
                    continue
                retry_after = parse_retry_after(response.headers.get("retry-after"))
                if status == 429:
                    wait = retry_after
                    if wait is None:
                        wait = full_jitter(attempt, s.backoff_base, s.backoff_cap, self._rng)
                    state.not_before = max(state.not_before, trio.current_time() + wait)
                    state.bucket.slow_down()
                    attempt += 1
                    if attempt > s.max_retries or wait > s.max_retry_wait:
                        raise RateLimited(current.origin, wait)
                    continue
                if status == 403:
                    state.breaker.record_failure()
                    cool_down = max(s.block_cool_down, retry_after or 0.0)
                    state.not_before = max(state.not_before, trio.current_time() + cool_down)
                    raise Blocked(current.url, status, cool_down)
                if status < 500:
                    state.breaker.record_success()
                    raise HttpStatusError(current.url, status)
                if retry_after is not None:  # a 503 may say how long; never come back sooner
                    state.not_before = max(state.not_before, trio.current_time() + retry_after)
                failure = MarketplaceUnavailable(current.url, f"HTTP {status}")
            state.breaker.record_failure()
            attempt += 1
            if attempt > s.max_retries:
                raise failure
            await trio.sleep(full_jitter(attempt - 1, s.backoff_base, s.backoff_cap, self._rng))

    async def _redirect_target(
        self, current: NormalisedUrl, response: MarketResponse, redirects: int
    ) -> NormalisedUrl:
        location = response.headers.get("location")
        if not location or redirects >= self.settings.max_redirects:
            raise HttpStatusError(current.url, response.status)
        next_url = urljoin(current.url, location)
        try:
            nxt = await self.check_url(next_url)
        except UrlRefused as err:
            raise UrlRefused(next_url, f"redirect refused: {err.reason}") from err
        if nxt.origin != current.origin:
            raise UrlRefused(next_url, "redirect leaves the origin")
        return nxt

    async def _wait_window(self, state: _Origin, origin: str) -> None:
        # Loop: another task may extend the window (a fresh 429) while we sleep.
        while (wait := state.not_before - trio.current_time()) > 0:
            if wait > self.settings.max_retry_wait:
                raise RateLimited(origin, wait)
            await trio.sleep_until(state.not_before)

    async def _send_once(
        self, state: _Origin, target: NormalisedUrl, *, api: bool
    ) -> MarketResponse:
        s = self.settings
        await self._wait_window(state, target.origin)
        probe = state.breaker.before_request()
        verdict = False
        try:
            async with state.limiter:
                await state.bucket.take()
                await self._wait_window(state, target.origin)
                headers = {"Accept": "application/json" if api else "text/html,*/*"}
                if api and state.token:
                    headers["Authorization"] = f"Bearer {state.token}"
                    if state.anon_id:
                        headers["X-Anon-Id"] = state.anon_id
                try:
                    with trio.fail_after(s.request_timeout):
                        response = await self._transfer(target.url, headers)
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

    async def _transfer(self, url: str, headers: dict[str, str]) -> MarketResponse:
        if self._http is None:
            raise RuntimeError("MarketClient used outside `async with`")
        limit = self.settings.max_bytes
        request = self._http.build_request("GET", url, headers=headers)
        response = await self._http.send(request, stream=True)
        try:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise ResponseTooLarge(url, limit)
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise ResponseTooLarge(url, limit)
                chunks.append(chunk)
        finally:
            await response.aclose()
        try:
            cookies = {k: v for k, v in response.cookies.items()}
        except httpx.CookieConflict:
            cookies = {}
        return MarketResponse(
            url=url,
            status=response.status_code,
            headers={k.lower(): v for k, v in response.headers.items()},
            cookies=cookies,
            content=b"".join(chunks),
        )


def _is_token_error(response: MarketResponse) -> bool:
    try:
        body = json.loads(response.content)
    except ValueError:
        return True  # a bare 401 on an API call still means "warm up again"
    return not isinstance(body, dict) or body.get("message_code") in (
        "invalid_authentication_token",
        None,
    )
