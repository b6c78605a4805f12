"""A tiny site behind a browser challenge, on loopback, for the browser-session tests.

`/` without a valid clearance answers `403` + `cf-mitigated: challenge` with a page whose
script first makes the requests the test planted (`probes`, to see what the browser's guards
let through), reports how they settled, then sets `cf_clearance` and reloads. With a clearance
that answers this visitor's challenge, sent with the User-Agent that received the challenge,
`/` sets `access_token_web` (a JWT with `exp`) and `anon_id` (unless `hand_token` is off).
`/hop/<n>` redirects to `redirects[n]`. Every visitor (one browser: its own `visitor` cookie)
is logged as `("start", id)` on its first request and `("token", id)` when it gets its token.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

import trio
from hypercorn.trio import serve

from tests.asgi import Receive, Scope, Send, lifespan, loopback_config, respond

TOKEN_LIFE = 3600


def jwt(claims: dict[str, object]) -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


@dataclass
class Visitor:
    user_agent: str
    clearance: str
    token: str | None = None


@dataclass
class ChallengeSite:
    hand_token: bool = True
    probes: tuple[str, ...] = ()  # URLs the challenge page fetches (no-cors) before clearing
    redirects: tuple[str, ...] = ()  # where /hop/<n> sends the browser
    origin: str = ""
    events: list[tuple[str, str]] = field(default_factory=list)
    visitors: dict[str, Visitor] = field(default_factory=dict)
    probe_reports: list[str] = field(default_factory=list)
    exp: int = 0

    def overlap(self) -> int:
        """The most visitors that were between their first request and their token at once."""
        active: set[str] = set()
        most = 0
        for kind, visitor in self.events:
            if kind == "start":
                active.add(visitor)
            else:
                active.discard(visitor)
            most = max(most, len(active))
        return most

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        cookies = {k: m.value for k, m in SimpleCookie(headers.get("cookie", "")).items()}
        path = scope["path"]
        if path.startswith("/hop/"):
            target = self.redirects[int(path.removeprefix("/hop/"))]
            await respond(send, 302, [(b"location", target.encode())], b"")
        elif path == "/probed":
            query = parse_qs(scope["query_string"].decode())
            self.probe_reports.append(query.get("r", [""])[0])
            await respond(send, 204, [], b"")
        elif path == "/":
            await self._home(send, headers.get("user-agent", ""), cookies)
        else:
            await respond(send, 404, [], b"")

    async def _home(self, send: Send, user_agent: str, cookies: dict[str, str]) -> None:
        visitor_id = cookies.get("visitor")
        visitor = self.visitors.get(visitor_id or "")
        if visitor is None or visitor_id is None:
            visitor_id = secrets.token_hex(6)
            visitor = self.visitors[visitor_id] = Visitor(user_agent, secrets.token_hex(8))
            self.events.append(("start", visitor_id))
        cleared = cookies.get("cf_clearance") == visitor.clearance
        if cleared and visitor.user_agent == user_agent:
            set_cookies = []
            if self.hand_token and visitor.token is None:
                self.exp = int(time.time()) + TOKEN_LIFE
                visitor.token = jwt({"iss": "vinted-iam-oauth", "sub": visitor_id, "exp": self.exp})
                self.events.append(("token", visitor_id))
                set_cookies = [
                    f"access_token_web={visitor.token}; Path=/; HttpOnly",
                    f"anon_id=anon-{visitor_id}; Path=/",
                ]
            body = b"<!DOCTYPE html><html lang='it-IT'><title>Home</title><p>welcome</p></html>"
            headers = [(b"content-type", b"text/html")]
            headers += [(b"set-cookie", c.encode()) for c in set_cookies]
            await respond(send, 200, headers, body)
            return
        await respond(send, 403, self._challenge_headers(visitor_id), self._page(visitor))

    @staticmethod
    def _challenge_headers(visitor_id: str) -> list[tuple[bytes, bytes]]:
        return [
            (b"content-type", b"text/html; charset=UTF-8"),
            (b"cf-mitigated", b"challenge"),
            (b"server", b"cloudflare"),
            (b"set-cookie", f"__cf_bm={secrets.token_hex(16)}; Path=/; HttpOnly".encode()),
            (b"set-cookie", f"visitor={visitor_id}; Path=/".encode()),
        ]

    def _page(self, visitor: Visitor) -> bytes:
        probes = json.dumps(list(self.probes))
        script = f"""
(async function () {{
  var settled = await Promise.allSettled({probes}.map(function (url) {{
    return fetch(url, {{mode: "no-cors", cache: "no-store"}});
  }}));
  var report = settled.map(function (s) {{ return s.status; }}).join(",");
  await fetch("/probed?r=" + encodeURIComponent(report));
  setTimeout(function () {{
    document.cookie = "cf_clearance={visitor.clearance}; path=/";
    location.reload();
  }}, 300);
}})();"""
        return (
            "<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>"
            f"<p>Verifying you are human.</p><script>{script}</script></body></html>"
        ).encode()


@asynccontextmanager
async def challenge_site(**options: object) -> AsyncIterator[ChallengeSite]:
    """`ChallengeSite(**options)` served on an ephemeral loopback port until the block ends."""
    site = ChallengeSite(**options)  # type: ignore[arg-type]
    config = loopback_config()
    config.errorlog = None
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            lambda task_status: serve(site, config, task_status=task_status)  # type: ignore[arg-type]
        )
        site.origin = binds[0]
        yield site
        nursery.cancel_scope.cancel()
