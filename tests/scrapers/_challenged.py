"""A simulator with two origins (site and API) for the September 2026 tests, and what they need to
read its challenge page and its tokens."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import trio

from scrapers.simulator import (
    RequestBudget,
    SimOrigins,
    SimulatorApp,
    SimulatorConfig,
    World,
    create_simulator_app,
    serve_app,
)

BROWSER_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129"
OTHER_UA = "python-httpx/0.27"
_STAGE = re.compile(r'<div id="challenge-stage"([^>]*)>')
_DATA = re.compile(r'data-(\w+)="([^"]*)"')


@dataclass
class TwoOrigins:
    app: SimulatorApp
    site: str
    api: str

    async def side_door(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """GET (or POST `body` to) `/__sim__/<path>` on the site origin; the JSON answer."""
        async with httpx.AsyncClient(timeout=10.0) as http:
            url = f"{self.site}/__sim__/{path}"
            response = await (http.get(url) if body is None else http.post(url, json=body))
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data


@asynccontextmanager
async def two_origins(
    config: SimulatorConfig, budget: RequestBudget | None = None
) -> AsyncIterator[TwoOrigins]:
    """The simulator on two loopback sockets: the site origin and the API origin."""
    app = create_simulator_app(World(config), budget=budget)
    async with trio.open_nursery() as nursery:
        origins: SimOrigins = await nursery.start(serve_app, app, "127.0.0.1", 0, 0)
        yield TwoOrigins(app, origins.site, origins.api)
        nursery.cancel_scope.cancel()


def browser_like(ua: str, **cookies: str) -> httpx.AsyncClient:
    """A plain client that sends `ua` and `cookies` (a browser's, or forged) on every request,
    redirects included."""
    return httpx.AsyncClient(timeout=10.0, headers={"user-agent": ua}, cookies=cookies)


def is_challenge(response: httpx.Response) -> bool:
    return (
        response.status_code == 403
        and response.headers.get("cf-mitigated") == "challenge"
        and response.headers.get("server") == "cloudflare"
    )


def solve(page: str) -> str:
    """What the challenge page's script computes (the test plays the browser's part, to check
    the server's side of the rule without one): the `cf_clearance` value."""
    stage = _STAGE.search(page)
    assert stage is not None, page[:300]
    data = dict(_DATA.findall(stage.group(1)))
    value = (int(data["a"]) * int(data["b"]) + int(data["c"])) % int(data["m"])
    return f"{data['ray']}.{value}"


def jwt_parts(token: str) -> tuple[dict[str, Any], dict[str, Any], bytes]:
    """Header, claims and signature of a JWT whose segments carry no padding."""
    header, claims, signature = token.split(".")

    def decode(segment: str) -> bytes:
        assert "=" not in segment
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))

    return json.loads(decode(header)), json.loads(decode(claims)), decode(signature)
