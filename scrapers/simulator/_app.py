"""The simulator as a raw ASGI app (no framework: it must be fast enough to benchmark against).

Marketplace paths speak MARKETPLACE.md in the live wire profile (`legacy` or `2026-09`, which
the side door can switch mid-run); `/__sim__/...` is the test-only side door (ground truth,
request log, fault knobs, profile) that the scrapers never call.

Origins: one app serves the site and, when the server binds an API port (`set_api_port`), the
API origin too (`scope["server"]` says which socket a request came to). One token table, so a
site warm-up's token is good on the API origin. The API origin serves `/`, `/robots.txt`, the
side door and, in 2026-09, `/svc-catalogue/items`; anything else there is a 404 code 104.
Without an API port the 2026-09 catalogue is served on the site origin. Every answer's `Date`
header is the simulated time (the market's clock), and each request's log entry says whether it
came to the API origin (`"api": true`).

Here: the ASGI plumbing, the request log, the freeze, the fault gate in front of every
marketplace path (per-client budget, 429, 403 block page, 503, slow answers, truncation) and
the session tokens. What the marketplace paths answer is `_market`'s.
"""

from __future__ import annotations

import math
import random
import re
import secrets
import uuid
from collections.abc import Awaitable, Callable
from email.utils import formatdate
from typing import Any

import trio

from . import _render as render
from ._answer import Answer, json_answer, not_found_104
from ._config import PROFILES, Faults
from ._market import market_answer
from ._side_door import side_door
from ._world import World

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_MARKET_PATHS = re.compile(r"^/(api/v2/|catalog|items/|svc-catalogue/)")


class SimulatorApp:
    """ASGI app over a `World`. All state (tokens, log, faults, live profile) lives here."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.faults = world.config.faults
        self.profile = world.config.profile  # live: `POST /__sim__/profile` moves it
        self.api_port: int | None = None
        self._remaining = self._counters(self.faults)
        self.rng = random.Random(world.config.seed * 7919 + 1)
        self.tokens: dict[str, float] = {}
        self.log: list[dict[str, Any]] = []
        self._buckets: dict[str, tuple[float, float]] = {}
        # client -> (start, end) of the last Retry-After window we sent
        self._windows: dict[str, tuple[float, float]] = {}
        self._clock_zero: float | None = None
        self.served = 0  # marketplace requests answered (the page handlers read it)
        self.request_origin = "http://127.0.0.1"  # the current request's, for absolute URLs
        # A frozen marketplace accepts requests and answers none until thawed (every path,
        # `/` and robots.txt included, but `/__sim__/`): the fault a timeout exists for.
        self._thawed = trio.Event()
        self._thawed.set()

    @property
    def frozen(self) -> bool:
        return not self._thawed.is_set()

    @frozen.setter
    def frozen(self, frozen: bool) -> None:
        if frozen and not self.frozen:
            self._thawed = trio.Event()
        elif not frozen:
            self._thawed.set()

    @staticmethod
    def _counters(faults: Faults) -> dict[str, int]:
        return {
            "429": faults.first_429, "403": faults.first_403, "5xx": faults.first_5xx,
            "truncated": faults.first_truncated, "empty": faults.first_empty,
            "ignore_filters": faults.first_ignore_filters,
        }  # fmt: skip

    def start_clock(self) -> None:
        """Simulated time starts now (called once the server listens)."""
        if self._clock_zero is None:
            self._clock_zero = trio.current_time()

    def sim_now(self) -> float:
        self.start_clock()
        assert self._clock_zero is not None
        return self.world.sim_time(trio.current_time(), self._clock_zero)

    def set_faults(self, faults: Faults) -> None:
        self.faults = faults
        self._remaining = self._counters(faults)
        self._buckets.clear()

    def set_profile(self, profile: str) -> None:
        """Move the live wire profile at once (the marketplace's own move, mid-run)."""
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {list(PROFILES)}")
        self.profile = profile

    def set_api_port(self, port: int | None) -> None:
        """Requests to this local port are the API origin (set by `serve_app` once bound)."""
        self.api_port = port

    def _on_api_origin(self, scope: Scope) -> bool:
        server = scope.get("server")
        return self.api_port is not None and server is not None and server[1] == self.api_port

    # -- ASGI ----------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self.start_clock()
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        arrived = trio.current_time()
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        cookies = _cookies(headers.get("cookie", ""))
        client = (
            headers.get("x-anon-id")
            or cookies.get("anon_id")
            or (f"ip:{scope['client'][0]}" if scope.get("client") else "unknown")
        )
        body = b""
        if scope["method"] == "POST":
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body") or len(body) > 65536:
                    break
        path = scope["path"]
        api = self._on_api_origin(scope)
        entry: dict[str, Any] = {
            "t": arrived, "sim_time": self.sim_now(), "client": client,
            "method": scope["method"], "path": path,
            "query": scope.get("query_string", b"").decode("latin-1"), "status": None,
            "early": self._is_early(client, arrived), "api": api,
        }  # fmt: skip
        if not path.startswith("/__sim__/"):
            self.log.append(entry)
            await self._thawed.wait()
        try:
            answer = await self._route(scope, path, headers, cookies, client, body, api)
        except Exception as err:  # a simulator bug answers 500 rather than killing the server
            answer = json_answer(500, {"code": 500, "message": f"simulator error: {err}"})
        entry["status"] = answer.status
        if answer.status == 429:
            retry = next((v for k, v in answer.headers if k == "retry-after"), None)
            entry["retry_after"] = retry
        # The market's clock: the simulated time, not the wall clock (Hypercorn's own Date
        # header is off), so a client stamping on the market's clock measures true durations.
        out_headers = [
            (b"content-type", answer.content_type.encode()),
            (b"date", formatdate(self.sim_now(), usegmt=True).encode()),
        ]
        out_headers += [(k.encode(), v.encode()) for k, v in answer.headers]
        out_headers.append((b"content-length", str(len(answer.body)).encode()))
        await send({"type": "http.response.start", "status": answer.status, "headers": out_headers})
        payload = b"" if scope["method"] == "HEAD" else answer.body
        await send({"type": "http.response.body", "body": payload})

    # -- routing -------------------------------------------------------------------------------

    async def _route(
        self, scope: Scope, path: str, headers: dict[str, str], cookies: dict[str, str],
        client: str, body: bytes, api: bool,
    ) -> Answer:  # fmt: skip
        query = scope.get("query_string", b"").decode("latin-1")
        if path.startswith("/__sim__/"):
            return side_door(self, scope["method"], path, query, body)
        if path == "/":
            return self._home()
        if path == "/robots.txt":
            return Answer(200, self.world.config.robots_txt.encode(), "text/plain")
        if not _MARKET_PATHS.match(path):
            return not_found_104() if api else Answer(404, b"<h1>Not found</h1>", "text/html")
        fault = await self._fault(client)
        if fault is not None:
            return fault
        # No await from here to the answer, so this per-request value cannot interleave.
        self.request_origin = "http://" + headers.get("host", "127.0.0.1")
        self.served += 1
        answer = market_answer(self, path, query, headers, cookies, api)
        if answer.status == 200 and self.take("truncated", self.faults.rate_truncated):
            answer.body = answer.body[: len(answer.body) // 2]
        return answer

    def take(self, counter: str, rate: float) -> bool:
        """Whether a fault fires: always while its `first_*` counter lasts, then by `rate`."""
        if self._remaining[counter] > 0:
            self._remaining[counter] -= 1
            return True
        return self.chance(rate)

    def chance(self, rate: float) -> bool:
        """Draws from the shared rng only when the knob is on, so knobs left at 0 keep every
        other fault's sequence (and the tests pinned on it) as it was."""
        return rate > 0 and self.rng.random() < rate

    async def _fault(self, client: str) -> Answer | None:
        f = self.faults
        if f.client_rate > 0:
            now = trio.current_time()
            tokens, stamp = self._buckets.get(client, (float(f.client_burst), now))
            tokens = min(float(f.client_burst), tokens + (now - stamp) * f.client_rate)
            if tokens < 1.0:
                self._buckets[client] = (tokens, now)
                return self._too_many(client, max(1, math.ceil((1.0 - tokens) / f.client_rate)))
            self._buckets[client] = (tokens - 1.0, now)
        if self.take("429", f.rate_429):
            return self._too_many(client, f.retry_after)
        if self.take("403", f.rate_403):
            return Answer(403, render.BLOCK_PAGE.encode(), "text/html")
        if self.take("5xx", f.rate_5xx):
            return Answer(503, b"<h1>Service unavailable</h1>", "text/html")
        if f.rate_slow > 0 and self.rng.random() < f.rate_slow:
            await trio.sleep(f.slow_seconds)
        return None

    def _is_early(self, client: str, arrived: float) -> bool:
        """Inside a window we announced. Requests that were already in flight when the 429
        went out arrive right at its start (10 ms grace): those are not the client's fault."""
        start, end = self._windows.get(client, (0.0, -math.inf))
        return start + 0.01 < arrived < end

    def _too_many(self, client: str, seconds: int) -> Answer:
        now = trio.current_time()
        if self.faults.retry_after_as_date:
            # An HTTP date has one-second resolution: the client may read up to a second less.
            value = formatdate(math.ceil(_wall_time()) + seconds + 1, usegmt=True)
        else:
            value = str(seconds)
        previous = self._windows.get(client, (now, now))
        self._windows[client] = (now, max(previous[1], now + seconds))
        return json_answer(
            429, {"code": 429, "message": "Too many requests"}, [("retry-after", value)]
        )

    def authorised(self, headers: dict[str, str], cookies: dict[str, str]) -> bool:
        """The request carries a live token (bearer header, else the `access_token_web` cookie)."""
        auth = headers.get("authorization", "")
        token = auth[7:] if auth.lower().startswith("bearer ") else cookies.get("access_token_web")
        expiry = self.tokens.get(token or "")
        return expiry is not None and expiry > trio.current_time()

    def _home(self) -> Answer:
        token = secrets.token_urlsafe(24)
        self.tokens[token] = trio.current_time() + self.world.config.token_ttl
        anon = str(uuid.UUID(int=self.rng.getrandbits(128)))
        return Answer(
            200,
            b"<!doctype html><html><body><h1>Marketplace</h1></body></html>",
            "text/html",
            [
                ("set-cookie", f"anon_id={anon}; Path=/; HttpOnly"),
                ("set-cookie", f"access_token_web={token}; Path=/; HttpOnly"),
            ],
        )


def _wall_time() -> float:
    import time

    return time.time()


def _cookies(header: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name:
            out[name] = value
    return out


def create_simulator_app(world: World) -> SimulatorApp:
    """The ASGI app for `world` (state per app: tokens, request log, faults)."""
    return SimulatorApp(world)
