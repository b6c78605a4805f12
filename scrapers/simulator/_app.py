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

Since September 2026 the site origin may stand behind a browser challenge (`_challenge`,
`SimulatorConfig.challenge_www`, switchable through the side door): every path of the site
origin but `/__sim__/` then needs a valid `cf_clearance`; the API origin never does. Each log
entry says which User-Agent asked (`"ua"`), whether it was answered with a challenge
(`"challenged"`) and whether it carried a valid clearance (`"cleared"`).

Listing photos (`/photos/<id>.jpg`, `_photos`) are served on the site origin, outside the fault
gate and the request budget, and the items' photo URLs name the site origin whichever origin
answered the catalogue.

Here: the ASGI plumbing, the request log, the freeze, the challenge, the fault gate in front of
every marketplace path (client budget, 429, 403 block page, 503, slow answers, truncation) and
the session tokens (JWTs, `_session`). What the marketplace paths answer is `_market`'s.
"""

from __future__ import annotations

import math
import random
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any

import trio

from . import _render as render
from ._answer import Answer, json_answer, not_found_104
from ._budget import RequestBudget
from ._challenge import ChallengeGate
from ._config import PROFILES, Faults
from ._market import market_answer
from ._photos import is_photo_path, photo_answer
from ._session import mint_token
from ._side_door import side_door
from ._world import World

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_MARKET_PATHS = re.compile(r"^/(api/v2/|catalog|items/|svc-catalogue/)")
_HOME_PAGE = b"<!doctype html><html><body><h1>Marketplace</h1></body></html>"


class SimulatorApp:
    """ASGI app over a `World`. All state (tokens, log, faults, live profile, challenge) lives
    here; the client budget too, unless the app is handed one shared with other apps."""

    def __init__(self, world: World, budget: RequestBudget | None = None) -> None:
        self.world = world
        self.faults = world.config.faults
        self.profile = world.config.profile  # live: `POST /__sim__/profile` moves it
        self.api_port: int | None = None
        self._remaining = self._counters(self.faults)
        self.rng = random.Random(world.config.seed * 7919 + 1)
        self.tokens: dict[str, float] = {}
        self.log: list[dict[str, Any]] = []
        self.budget = RequestBudget() if budget is None else budget
        self.challenge = ChallengeGate(world.config.challenge_www, world.config.clearance_ttl)
        self._clock_zero: float | None = None
        self._paused_at: float | None = None  # the simulated time it stopped at, if paused
        self.served = 0  # marketplace requests answered (the page handlers read it)
        self.request_origin = "http://127.0.0.1"  # the current request's, for absolute URLs
        # The site origin as the current request names its host: photos live there, also
        # when the catalogue is answered on the API origin.
        self.site_origin = self.request_origin
        self.site_port: int | None = None
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
        if self._paused_at is not None:
            return self._paused_at
        self.start_clock()
        assert self._clock_zero is not None
        return self.world.sim_time(trio.current_time(), self._clock_zero)

    def pause_clock(self, paused: bool) -> None:
        """Stop simulated time where it is (the market still answers, nothing changes), or
        let it go on from there: a test's way to let every poller see one settled market."""
        if paused and self._paused_at is None:
            self._paused_at = self.sim_now()
        elif not paused and self._paused_at is not None:
            stopped_at, self._paused_at = self._paused_at, None
            speed = self.world.config.speed
            if speed > 0 and self._clock_zero is not None:
                self._clock_zero += (self.sim_now() - stopped_at) / speed

    def advance_clock(self, seconds: float) -> None:
        """Move a paused clock on by `seconds` of simulated time (a test's step of the market:
        every poller then reads the same market at the same time). `ValueError` unless paused
        and `seconds` >= 0."""
        if self._paused_at is None or not seconds >= 0:
            raise ValueError("advance needs a paused clock and seconds >= 0")
        self._paused_at += seconds

    def set_faults(self, faults: Faults) -> None:
        self.faults = faults
        self._remaining = self._counters(faults)
        self.budget.refill()  # a shared budget too: new knobs start every bucket full

    def set_profile(self, profile: str) -> None:
        """Move the live wire profile at once (the marketplace's own move, mid-run)."""
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {list(PROFILES)}")
        self.profile = profile

    def set_api_port(self, port: int | None, site_port: int | None = None) -> None:
        """Requests to this local port are the API origin, the site's is `site_port` (set by
        `serve_app` once bound)."""
        self.api_port = port
        self.site_port = site_port

    def _on_api_origin(self, scope: Scope) -> bool:
        server = scope.get("server")
        return self.api_port is not None and server is not None and server[1] == self.api_port

    # -- ASGI ----------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        request = await _Request.read(scope, receive, self._on_api_origin(scope))
        entry: dict[str, Any] = {
            "t": trio.current_time(), "sim_time": self.sim_now(), "client": request.client,
            "ip": request.ip, "method": request.method, "path": request.path,
            "query": request.query, "status": None,
            "early": self.budget.is_early(self._budget_key(request), trio.current_time()),
            "api": request.api, "ua": request.ua, "challenged": False, "cleared": False,
        }  # fmt: skip
        if request.path.startswith("/__sim__/"):
            answer = await self._answer(request, cleared=False)
        else:
            self.log.append(entry)
            await self._thawed.wait()
            # Checked once thawed: a clearance's age counts up to the moment it is looked at.
            cleared = self.challenge.cleared(
                request.cookies.get("cf_clearance"), request.ua, trio.current_time()
            )
            entry["cleared"] = cleared
            if self.challenge.enabled and not request.api and not cleared:
                entry["challenged"] = True
                answer = self.challenge.issue(request.ua, trio.current_time())
            else:
                answer = await self._answer(request, cleared)
        entry["status"] = answer.status
        if answer.status == 429:
            entry["retry_after"] = next((v for k, v in answer.headers if k == "retry-after"), None)
        await self._send(request.method, send, answer)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.start_clock()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _answer(self, request: _Request, cleared: bool) -> Answer:
        try:
            return await self._route(request, cleared)
        except Exception as err:  # a simulator bug answers 500 rather than killing the server
            return json_answer(500, {"code": 500, "message": f"simulator error: {err}"})

    async def _send(self, method: str, send: Send, answer: Answer) -> None:
        # The market's clock: the simulated time, not the wall clock (Hypercorn's own Date
        # header is off), so a client stamping on the market's clock measures true durations.
        out_headers = [
            (b"content-type", answer.content_type.encode()),
            (b"date", formatdate(self.sim_now(), usegmt=True).encode()),
        ]
        out_headers += [(k.encode(), v.encode()) for k, v in answer.headers]
        out_headers.append((b"content-length", str(len(answer.body)).encode()))
        await send({"type": "http.response.start", "status": answer.status, "headers": out_headers})
        payload = b"" if method == "HEAD" else answer.body
        await send({"type": "http.response.body", "body": payload})

    # -- routing -------------------------------------------------------------------------------

    async def _route(self, request: _Request, cleared: bool) -> Answer:
        path, query = request.path, request.query
        if path.startswith("/__sim__/"):
            return side_door(self, request.method, path, query, request.body)
        if path == "/":
            # The API origin is never challenged, but while the site is, it must not become
            # the door to a session that only a browser can get.
            return self._home(session=cleared or not (request.api and self.challenge.enabled))
        if path == "/robots.txt":
            return Answer(200, self.world.config.robots_txt.encode(), "text/plain")
        if is_photo_path(path) and not request.api:
            return photo_answer(self.world, path, self.sim_now())
        if not _MARKET_PATHS.match(path):
            if request.api:
                return not_found_104()
            return Answer(404, b"<h1>Not found</h1>", "text/html")
        fault = await self._fault(self._budget_key(request))
        if fault is not None:
            return fault
        # No await from here to the answer, so this per-request value cannot interleave.
        host = request.headers.get("host", "127.0.0.1")
        self.request_origin = "http://" + host
        self.site_origin = self.request_origin
        if request.api and self.site_port is not None:
            self.site_origin = f"http://{host.rsplit(':', 1)[0]}:{self.site_port}"
        self.served += 1
        answer = market_answer(self, path, query, request.headers, request.cookies, request.api)
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

    def _budget_key(self, request: _Request) -> str:
        """Whose budget a request spends: its client (anon id, else address), or its address
        alone with `budget_per_ip` (the real site's rule since September 2026)."""
        return _ip_key(request.ip) if self.faults.budget_per_ip else request.client

    async def _fault(self, key: str) -> Answer | None:
        f = self.faults
        if f.client_rate > 0:
            wait = self.budget.spend(key, f.client_rate, f.client_burst, trio.current_time())
            if wait is not None:
                return self._too_many(key, wait)
        if self.take("429", f.rate_429):
            return self._too_many(key, f.retry_after)
        if self.take("403", f.rate_403):
            return Answer(403, render.BLOCK_PAGE.encode(), "text/html")
        if self.take("5xx", f.rate_5xx):
            return Answer(503, b"<h1>Service unavailable</h1>", "text/html")
        if f.rate_slow > 0 and self.rng.random() < f.rate_slow:
            await trio.sleep(f.slow_seconds)
        return None

    def _too_many(self, key: str, seconds: int) -> Answer:
        if self.faults.retry_after_as_date:
            # An HTTP date has one-second resolution: the client may read up to a second less.
            value = formatdate(math.ceil(time.time()) + seconds + 1, usegmt=True)
        else:
            value = str(seconds)
        self.budget.announce(key, trio.current_time(), seconds)
        return json_answer(
            429, {"code": 429, "message": "Too many requests"}, [("retry-after", value)]
        )

    def authorised(self, headers: dict[str, str], cookies: dict[str, str]) -> bool:
        """The request carries a live token (bearer header, else the `access_token_web` cookie
        alone: the API origin asks for nothing else since September 2026)."""
        auth = headers.get("authorization", "")
        token = auth[7:] if auth.lower().startswith("bearer ") else cookies.get("access_token_web")
        expiry = self.tokens.get(token or "")
        return expiry is not None and expiry > trio.current_time()

    def _home(self, session: bool = True) -> Answer:
        """The session: an anon id and a JWT that lives `token_ttl` server seconds (its `exp`
        says so on the wall clock); the page without them when not `session`."""
        if not session:
            return Answer(200, _HOME_PAGE, "text/html")
        anon = str(uuid.UUID(int=self.rng.getrandbits(128)))
        ttl = self.world.config.token_ttl
        token = mint_token(anon, time.time(), ttl)
        self.tokens[token] = trio.current_time() + ttl
        return Answer(
            200,
            _HOME_PAGE,
            "text/html",
            [
                ("set-cookie", f"anon_id={anon}; Path=/; HttpOnly"),
                ("set-cookie", f"access_token_web={token}; Path=/; HttpOnly"),
            ],
        )


@dataclass(frozen=True, slots=True)
class _Request:
    """What the app reads of one HTTP request. `client` keys the budget by default: the anon
    id the request states, else its address."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    cookies: dict[str, str]
    ip: str | None
    client: str
    ua: str
    body: bytes
    api: bool  # came to the API origin's socket

    @classmethod
    async def read(cls, scope: Scope, receive: Receive, api: bool) -> _Request:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        cookies = _cookies(headers.get("cookie", ""))
        ip = scope["client"][0] if scope.get("client") else None
        return cls(
            method=scope["method"], path=scope["path"],
            query=scope.get("query_string", b"").decode("latin-1"),
            headers=headers, cookies=cookies, ip=ip,
            client=headers.get("x-anon-id") or cookies.get("anon_id") or _ip_key(ip),
            ua=headers.get("user-agent", ""), body=await _body(scope, receive), api=api,
        )  # fmt: skip


def _ip_key(ip: str | None) -> str:
    return f"ip:{ip}" if ip is not None else "unknown"


async def _body(scope: Scope, receive: Receive) -> bytes:
    """A POST's body, cut after 64 KiB (side-door bodies are small)."""
    body = b""
    if scope["method"] == "POST":
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body") or len(body) > 65536:
                break
    return body


def _cookies(header: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name:
            out[name] = value
    return out


def create_simulator_app(world: World, *, budget: RequestBudget | None = None) -> SimulatorApp:
    """The ASGI app for `world` (state per app: tokens, request log, faults, challenge). Apps
    standing for several sites polled from one address share one client budget when handed
    the same `budget` (with `Faults.client_rate`, and `budget_per_ip` to key it by address)."""
    return SimulatorApp(world, budget)
