"""The marketplace behind its browser challenge, end to end over real sockets: the simulator
with `challenge_www` on (every path of the site origin answers 403 `cf-mitigated: challenge`
to a client without a clearance; the API origin is never challenged), the whole service.

- With Debian's Chromium, the monitor becomes active, the API origin is polled throughout and
  never paused, the challenge is passed by the browser and never by the plain client, and the
  session is renewed before its token expires.
- With the browser off and no session, the monitor stays active and says why; a session
  pasted by an operator is used within one interval.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import trio

from api.settings import Settings
from scrapers import DEFAULT_USER_AGENT
from scrapers.simulator import SimOrigins, SimulatorConfig, serve_simulator
from tests.api.helpers import signed_in, start_monitor
from tests.conftest import RunningService, start_service
from tests.waiting import eventually
from tests.web.conftest import CHROMIUM, require_chromium

OPERATOR = "ops@example.com"


def challenged_market(**overrides: Any) -> SimulatorConfig:
    values: dict[str, Any] = {
        "seed": 11, "speed": 3600.0, "n_listings": 200, "profile": "2026-09",
        "challenge_www": True,
    }  # fmt: skip
    values.update(overrides)
    return SimulatorConfig(**values)


def service_settings(settings: Settings, origins: SimOrigins, **overrides: Any) -> Settings:
    return settings.model_copy(
        update={
            "market_origins": (origins.site, origins.api),
            "market_api_origins": ((origins.site, origins.api),),
            "market_rate": 0,
            "min_poll_seconds": 1,
            **overrides,
        }
    )


@asynccontextmanager
async def service_for(
    nursery: trio.Nursery, settings: Settings
) -> AsyncIterator[tuple[RunningService, httpx.AsyncClient, httpx.AsyncClient]]:
    """The service, a signed-in user and a signed-in operator."""
    service, stop = await start_service(nursery, settings)
    async with service.client() as user, service.client() as ops:
        await signed_in(user)
        await signed_in(ops, OPERATOR)
        yield service, user, ops
    stop.set()


async def monitor(client: httpx.AsyncClient, monitor_id: str) -> dict[str, Any]:
    return (await client.get(f"/api/monitoring/{monitor_id}")).json()  # type: ignore[no-any-return]


async def site_report(ops: httpx.AsyncClient, site: str) -> dict[str, Any]:
    origins = (await ops.get("/api/ops/origins")).json()["origins"]
    return next(o for o in origins if o["origin"] == site)


def requests(sim: SimOrigins, log: list[dict[str, Any]], *, api: bool) -> list[dict[str, Any]]:
    return [r for r in log if r["api"] is api]


async def sim_log(sim: httpx.AsyncClient) -> list[dict[str, Any]]:
    return (await sim.get("/__sim__/requests")).json()["requests"]  # type: ignore[no-any-return]


# SQLite only: what is judged is the session; the store's two backends are covered below
# (a pasted session is stored sealed on both) and by tests/store.
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_real_browser_opens_the_session_and_renews_it_before_it_expires(
    settings: Settings, nursery: trio.Nursery
) -> None:
    require_chromium()
    # Tokens live 24 s: the session is renewed (ahead of `exp`) while the test watches.
    origins: SimOrigins = await nursery.start(
        serve_simulator, challenged_market(token_ttl=24.0), "127.0.0.1", 0, 0
    )
    settings = service_settings(settings, origins, market_browser=CHROMIUM)
    async with (
        service_for(nursery, settings) as (_, user, ops),
        httpx.AsyncClient(base_url=origins.site) as sim,
    ):
        started = time.monotonic()
        created = await start_monitor(
            user, f"{origins.site}/catalog?catalog[]=1904&order=newest_first", 2
        )
        monitor_id = str(created["id"])

        async def bootstrapped() -> bool:
            body = await monitor(user, monitor_id)
            return body["status"] == "active" and body["bootstrapped_at"] is not None

        await eventually(bootstrapped, within=60, what="the monitor's bootstrap")
        assert time.monotonic() - started < 60

        # Two sessions from the browser: the first, and one renewed before the first expired,
        # held by the client (the report is read until then: the browser's clearance is logged
        # by the market a moment before the client has stored the session it opened).
        async def renewed() -> bool:
            homes = [r for r in await sim_log(sim) if r["path"] == "/" and r["cleared"]]
            held = (await site_report(ops, origins.site))["challenge"]
            return len(homes) >= 2 and str(held).startswith("browser session until")

        await eventually(renewed, within=90, what="a browser session renewed")
        body = await monitor(user, monitor_id)
        report = await site_report(ops, origins.site)
        log = await sim_log(sim)

    assert body["status"] == "active" and body["consecutive_errors"] == 0, body
    assert report["challenge"].startswith("browser session until"), report
    assert report["session_source"] == "browser"
    # The API origin was polled throughout and never paused; nothing answered 401.
    api = requests(origins, log, api=True)
    catalogue = [r for r in api if r["path"] == "/svc-catalogue/items"]
    assert len(catalogue) >= 3 and all(r["status"] == 200 for r in catalogue)
    assert report["api_breaker"] == "closed" and report["api_blocked_for_seconds"] == 0
    assert report["breaker"] == "closed" and report["blocked_for_seconds"] == 0
    assert not [r for r in log if r["status"] == 401]
    # The challenge: passed by the browser, never by the plain client. The plain client's own
    # requests to the site were all challenged; every cleared one carried the browser's agent.
    www = requests(origins, log, api=False)
    plain = [r for r in www if r["ua"] == DEFAULT_USER_AGENT]
    assert plain and all(r["challenged"] for r in plain)
    cleared = [r for r in www if r["cleared"]]
    assert cleared and all(r["ua"] != DEFAULT_USER_AGENT for r in cleared)
    assert all("Headless" not in r["ua"] for r in cleared)
    # Item pages answered through the session (the state sources work again).
    assert any(r["path"].startswith("/items/") and r["status"] == 200 for r in www)


def _jwt(exp: float) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part({'iss': 'vinted-iam-oauth', 'exp': exp})}.c2ln"


async def token_from_unchallenged_site(sim: httpx.AsyncClient) -> str:
    """An operator's session: the token a browser of theirs was given (the side door lifts
    the challenge for one plain request, then puts it back)."""
    assert (await sim.post("/__sim__/challenge", json={"www": False})).status_code == 200
    home = await sim.get("/")
    assert (await sim.post("/__sim__/challenge", json={"www": True})).status_code == 200
    return home.cookies["access_token_web"]


async def test_without_a_browser_the_monitor_waits_and_a_pasted_session_is_used(
    settings: Settings, nursery: trio.Nursery
) -> None:
    origins: SimOrigins = await nursery.start(
        serve_simulator, challenged_market(), "127.0.0.1", 0, 0
    )
    settings = service_settings(settings, origins, market_browser="off")
    site = origins.site.split("://", 1)[1]  # how an operator names it: host and port
    async with (
        service_for(nursery, settings) as (_, user, ops),
        httpx.AsyncClient(base_url=origins.site) as sim,
    ):
        created = await start_monitor(
            user, f"{origins.site}/catalog?catalog[]=1904&order=newest_first", 2
        )
        monitor_id = str(created["id"])

        async def waits_for_a_session() -> bool:
            body = await monitor(user, monitor_id)
            return body["last_error_kind"] == "no_session"

        await eventually(waits_for_a_session, within=60, what="the monitor says why")
        waiting = await monitor(user, monitor_id)
        assert waiting["status"] == "active", waiting
        assert "NICHESCOPE_MARKET_BROWSER" in waiting["last_error"], waiting
        assert waiting["polls"] == 0 and waiting["bootstrapped_at"] is None
        report = await site_report(ops, origins.site)
        assert report["browser"] == "off" and report["session_source"] is None
        assert report["breaker"] == "closed" and report["blocked_for_seconds"] == 0

        # Bad sessions are refused, naming the reason; nothing is stored.
        for cookie, reason in (
            ("access_token_web=not-a-jwt", "not a JWT"),
            (f"access_token_web={_jwt(time.time() - 60)}", "expired"),
            ("anon_id=1", "no access_token_web"),
        ):
            refused = await ops.put(f"/api/ops/origins/{site}/session", json={"cookie": cookie})
            assert refused.status_code == 422, refused.text
            assert refused.json()["error"]["code"] == "session_refused"
            assert reason in refused.json()["error"]["message"]
        token = await token_from_unchallenged_site(sim)
        not_operator = await user.put(
            f"/api/ops/origins/{site}/session", json={"cookie": f"access_token_web={token}"}
        )
        assert not_operator.status_code in (403, 404)

        pasted = await ops.put(
            f"/api/ops/origins/{site}/session", json={"cookie": f"access_token_web={token}"}
        )
        assert pasted.status_code == 200, pasted.text
        assert token not in pasted.text  # never shown back
        assert pasted.json()["source"] == "operator"
        supplied = time.monotonic()

        async def polled() -> bool:
            return int((await monitor(user, monitor_id))["polls"]) >= 1

        await eventually(polled, within=30, what="a poll with the pasted session")
        # Within one interval (2 s) of the session, with room for a busy machine.
        assert time.monotonic() - supplied < 2 + 8
        body = await monitor(user, monitor_id)
        report = await site_report(ops, origins.site)
    assert body["status"] == "active" and body["bootstrapped_at"] is not None
    assert report["challenge"].startswith("operator session until"), report
