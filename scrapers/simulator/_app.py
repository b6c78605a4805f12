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
"""

from __future__ import annotations

import math
import random
import re
import secrets
import uuid
from collections.abc import Awaitable, Callable
from decimal import InvalidOperation
from email.utils import formatdate
from typing import Any
from urllib.parse import parse_qsl

import trio

from .._query import parse_catalogue_url
from ..errors import InvalidCatalogueUrl
from . import _render as render
from . import _render_2026 as render_2026
from ._answer import Answer, access_denied_106, json_answer, not_found_104
from ._config import PROFILE_2026_09, PROFILES, Faults
from ._side_door import side_door
from ._world import FeedFilter, World

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_DETAILS = re.compile(r"^/api/v2/items/(\d+)/details$")
# Any slug: `render.slug` keeps punctuation such as the `&` of "h&m", and the redirect from a
# bare id must land on a page, not on a 404 that reads as "deleted".
_ITEM_PAGE = re.compile(r"^/items/(\d+)(-[^/]*)?$")
_MARKET_PATHS = re.compile(r"^/(api/v2/|catalog|items/|svc-catalogue/)")
_SVC_CATALOGUE = "/svc-catalogue/items"
_LEGACY_CATALOGUE = "/api/v2/catalog/items"


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
        self._served = 0
        self._request_origin = "http://127.0.0.1"
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
        self._request_origin = "http://" + headers.get("host", "127.0.0.1")
        self._served += 1
        answer = self._market(path, query, headers, cookies, api)
        if answer.status == 200 and self._take("truncated", self.faults.rate_truncated):
            answer.body = answer.body[: len(answer.body) // 2]
        return answer

    def _market(
        self, path: str, query: str, headers: dict[str, str], cookies: dict[str, str], api: bool
    ) -> Answer:
        """Marketplace paths by origin and live profile (see the module docstring)."""
        today = self.profile == PROFILE_2026_09
        if path == _SVC_CATALOGUE:
            if not today or (self.api_port is not None and not api):
                return not_found_104()
            if not self._authorised(headers, cookies):
                return _unauthorised()
            return self._catalogue_api(query)
        if api:  # the API host serves nothing else
            return not_found_104()
        if path.startswith("/api/"):
            if path == _LEGACY_CATALOGUE and today:  # dropped since September 2026
                return not_found_104()
            if not self._authorised(headers, cookies):
                return _unauthorised()
            if path == _LEGACY_CATALOGUE:
                return self._catalogue_api(query)
            if match := _DETAILS.match(path):
                if self._chance(self.faults.detail_refusal):  # one endpoint refused, not a block
                    return access_denied_106()
                return self._details(int(match.group(1)))
            return json_answer(404, {"code": 404, "message": "Not found"})
        if path == "/catalog" or path.startswith("/catalog/"):
            return self._catalogue_html(path, query)
        if match := _ITEM_PAGE.match(path):
            return self._item_page(int(match.group(1)), match.group(2))
        return Answer(404, b"<h1>Not found</h1>", "text/html")

    def _take(self, counter: str, rate: float) -> bool:
        if self._remaining[counter] > 0:
            self._remaining[counter] -= 1
            return True
        return self._chance(rate)

    def _chance(self, rate: float) -> bool:
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
        if self._take("429", f.rate_429):
            return self._too_many(client, f.retry_after)
        if self._take("403", f.rate_403):
            return Answer(403, render.BLOCK_PAGE.encode(), "text/html")
        if self._take("5xx", f.rate_5xx):
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

    def _authorised(self, headers: dict[str, str], cookies: dict[str, str]) -> bool:
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

    def _origin(self) -> str:
        return self._request_origin

    def _catalogue_filter(self, feed_filter: FeedFilter) -> FeedFilter | None:
        """The fault knobs that make a block look like success: None for an empty answer, the
        unfiltered feed when filters are ignored, else the filter as asked."""
        if self._take("empty", self.faults.rate_empty):
            return None
        if self._take("ignore_filters", self.faults.rate_ignore_filters):
            return FeedFilter()
        return feed_filter

    def _catalogue_api(self, query: str) -> Answer:
        """The JSON catalogue in the live profile: legacy `*_ids` filters and `{"code": 0}`, or
        2026-09 `attribute_ids[...]` filters, today's item shape and promoted items."""
        today = self.profile == PROFILE_2026_09
        pairs = parse_qsl(query)
        params = dict(pairs)
        try:
            if today:
                asked = render_2026.filter_from_pairs(pairs)
            else:
                asked = render.filter_from_params(params)
            page = max(1, int(params.get("page", "1")))
            per_page = min(200, max(1, int(params.get("per_page", "96"))))
        except (ValueError, InvalidOperation):
            return json_answer(400, {"code": 400, "message": "bad parameters"})
        now = self.sim_now()
        feed_filter = self._catalogue_filter(asked)
        live = [] if feed_filter is None else self.world.live(now, feed_filter)
        items, total, pages = self.world.page_of(live, page, per_page, params.get("order"))
        origin = self._origin()
        if today:
            share = self.world.config.promoted_share
            key = f"{self.world.config.seed}|{query}|{int(now // render_2026.PROMOTION_PERIOD)}"
            entries = render_2026.with_promoted(live, items, share, key)
            locale = self.world.config.locale
            docs = [render_2026.catalogue_item(self.world, item, now, origin, locale, promoted)
                    for item, promoted in entries]  # fmt: skip
        else:
            docs = [render.catalogue_item(self.world, i, now, origin) for i in items]
        self._damage(docs, render_2026.drop_fields if today else render.drop_fields)
        if today:
            tracking = f"{self.world.config.seed}|{self._served}"
            return json_answer(200, render_2026.catalogue_body(docs, page, per_page, total, pages,
                                                               now, tracking))  # fmt: skip
        return json_answer(200, {
            "items": docs,
            "pagination": {"current_page": page, "total_pages": pages, "total_entries": total,
                           "per_page": per_page},
            "code": 0,
        })  # fmt: skip

    def _damage(
        self,
        docs: list[dict[str, Any]],
        drop: Callable[[dict[str, Any], random.Random], dict[str, Any]],
    ) -> None:
        """The drifting-JSON faults: ids as strings, missing fields (in place)."""
        if self.faults.ids_as_strings > 0:
            for doc in docs:
                if self.rng.random() < self.faults.ids_as_strings:
                    doc["id"] = str(doc["id"])
        if self.faults.rate_missing_fields > 0:
            for index, doc in enumerate(docs):
                if self.rng.random() < self.faults.rate_missing_fields:
                    docs[index] = drop(doc, self.rng)

    def _details(self, item_id: int) -> Answer:
        now = self.sim_now()
        item = self.world.by_id.get(item_id)
        state = item.state_at(now) if item is not None else None
        # Deleted listings answer 404 (odd ids) or a hidden item (even ids): both happen for real.
        if item is None or state is None or (state == "deleted" and item_id % 2):
            return json_answer(404, {"code": 404, "message": "Item not found"})
        return json_answer(200, {"item": render.item_detail(self.world, item, now, self._origin()),
                           "code": 0})  # fmt: skip

    def _catalogue_html(self, path: str, query: str) -> Answer:
        try:
            parsed = parse_catalogue_url(f"http://sim{path}?{query}")
        except InvalidCatalogueUrl as err:
            return Answer(400, f"<h1>{err.reason}</h1>".encode(), "text/html")
        feed_filter = FeedFilter(
            catalog_ids=frozenset(parsed.catalog_ids), brand_ids=frozenset(parsed.brand_ids),
            size_ids=frozenset(parsed.size_ids), status_ids=frozenset(parsed.status_ids),
            price_from=parsed.price_from, price_to=parsed.price_to,
            search_text=parsed.search_text,
        )  # fmt: skip
        page = dict(parse_qsl(query)).get("page", "1")
        now = self.sim_now()
        served = self._catalogue_filter(feed_filter)
        live = [] if served is None else self.world.live(now, served)
        items, _, _ = self.world.page_of(
            live, max(1, int(page) if page.isascii() and page.isdigit() else 1), 96, parsed.order
        )
        layout = self.world.config.html_layout
        if layout not in ("A", "B"):
            layout = "AB"[self._served % 2]
        broken = None
        rate = self.faults.rate_missing_fields
        if items and rate > 0 and self.rng.random() < rate:
            broken = self.rng.randrange(len(items))
        page_html = render.catalogue_html(self.world, items, now, layout, broken)
        return Answer(200, page_html.encode(), "text/html; charset=utf-8")

    def _item_page(self, item_id: int, slug_part: str | None) -> Answer:
        now = self.sim_now()
        item = self.world.by_id.get(item_id)
        state = item.state_at(now) if item is not None else None
        if item is None or state is None or state == "deleted":
            return Answer(404, b"<h1>This item is gone</h1>", "text/html")
        if not slug_part:  # the marketplace redirects bare ids to the canonical slug URL
            return Answer(301, b"", "text/html",
                           [("location", f"/items/{item.id}-{render.slug(item)}")])  # fmt: skip
        if self.profile == PROFILE_2026_09:
            config = self.world.config
            page = render_2026.item_page(self.world, item, state, self._origin(), config.locale,
                                         config.item_page_padding)  # fmt: skip
            return Answer(200, page, "text/html; charset=utf-8")
        page_html = render.item_page(self.world, item, now, self._origin())
        return Answer(200, page_html.encode(), "text/html; charset=utf-8")


def _wall_time() -> float:
    import time

    return time.time()


def _unauthorised() -> Answer:
    return json_answer(401, {"code": 100, "message_code": "invalid_authentication_token",
                             "message": "Token expired or invalid"})  # fmt: skip


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
