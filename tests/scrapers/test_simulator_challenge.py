"""The simulator's site origin behind a browser challenge, and its JWT session tokens
(MARKETPLACE.md, "Since 13 September 2026"), over real loopback sockets with a plain HTTP client.
The browser's own pass is `test_simulator_browser.py`."""

from __future__ import annotations

import time
from typing import Any

import httpx
import trio

from scrapers.simulator import SimulatorConfig
from scrapers.simulator._challenge import MAX_CLEARED, MAX_PENDING, ChallengeGate

from ._challenged import (
    BROWSER_UA,
    OTHER_UA,
    TwoOrigins,
    browser_like,
    is_challenge,
    jwt_parts,
    solve,
    two_origins,
)

CHALLENGED = SimulatorConfig(seed=31, n_listings=200, arrivals_per_day=50.0, horizon_days=2.0,
                             speed=1.0, profile="2026-09", challenge_www=True,
                             token_ttl=3600.0)  # fmt: skip


async def _open_item(sim: TwoOrigins) -> int:
    truth = await sim.side_door("truth")
    return next(int(item["id"]) for item in truth["listings"] if item["state"] == "open")


async def _pass(site: str, ua: str) -> str:
    """Play the browser once: fetch the challenge with `ua`, answer it; the clearance."""
    async with browser_like(ua) as http:
        page = await http.get(f"{site}/")
    assert is_challenge(page)
    return solve(page.text)


async def _home(site: str, clearance: str, ua: str = BROWSER_UA) -> httpx.Response:
    async with browser_like(ua, cf_clearance=clearance) as http:
        return await http.get(f"{site}/")


async def test_every_site_path_is_challenged_and_no_session_is_handed_out() -> None:
    async with two_origins(CHALLENGED) as sim, httpx.AsyncClient(timeout=10.0) as http:
        item = await _open_item(sim)  # the side door itself is never challenged
        paths = ["/", "/robots.txt", f"/items/{item}", f"/api/v2/items/{item}/details",
                 "/catalog?catalog[]=1904", "/svc-catalogue/items"]  # fmt: skip
        for path in paths:
            response = await http.get(f"{sim.site}{path}")
            assert is_challenge(response), (path, response.status_code, response.headers)
            assert response.headers["content-type"].startswith("text/html")
            assert "<title>Just a moment...</title>" in response.text
            assert "document.cookie" in response.text and "location.reload()" in response.text
            cookies = response.headers.get_list("set-cookie")
            assert len(cookies) == 1 and cookies[0].startswith("__cf_bm=")
            assert "HttpOnly" in cookies[0] and "Path=/" in cookies[0]
        head = await http.head(f"{sim.site}/")
        assert is_challenge(head) and "access_token_web" not in head.headers.get("set-cookie", "")
        assert "access_token_web" not in http.cookies and "anon_id" not in http.cookies

        # The API origin is never challenged, and yet hands out no session of its own.
        for path in ("/", "/robots.txt"):
            answer = await http.get(f"{sim.api}{path}")
            assert answer.status_code == 200 and "cf-mitigated" not in answer.headers
            assert "access_token_web" not in answer.headers.get("set-cookie", "")
        log = [r for r in sim.app.log if not r["api"]]
        assert log and all(r["challenged"] and not r["cleared"] for r in log)
        assert all(r["ua"].startswith("python-httpx") for r in log)
        assert not any(r["challenged"] for r in sim.app.log if r["api"])


async def test_a_cleared_session_works_on_the_api_origin_with_the_token_cookie_alone() -> None:
    async with two_origins(CHALLENGED) as sim:
        clearance = await _pass(sim.site, BROWSER_UA)
        home = await _home(sim.site, clearance)
        assert home.status_code == 200 and "cf-mitigated" not in home.headers
        token, anon = home.cookies["access_token_web"], home.cookies["anon_id"]

        header, claims, signature = jwt_parts(token)
        assert header == {"alg": "RS256", "typ": "JWT"} and len(signature) >= 64
        assert claims["iss"] == "vinted-iam-oauth" and claims["sub"] == anon
        assert claims["scope"] == "public"
        assert claims["exp"] - claims["iat"] in (3599, 3600)  # token_ttl, rounded down
        assert abs(claims["iat"] - time.time()) < 120

        feed_url = f"{sim.api}/svc-catalogue/items?per_page=20"
        async with browser_like(OTHER_UA, access_token_web=token) as bare:  # the cookie alone
            feed = await bare.get(feed_url)
        assert feed.status_code == 200 and feed.json()["items"]
        async with browser_like(OTHER_UA) as bare:
            bearer = await bare.get(feed_url, headers={"Authorization": f"Bearer {token}",
                                                       "X-Anon-Id": anon})  # fmt: skip
            assert bearer.status_code == 200
            nothing = await bare.get(feed_url)
            assert nothing.status_code == 401 and nothing.json()["code"] == 100

        # The clearance, with its User-Agent, opens the site's other paths too.
        item = await _open_item(sim)
        async with browser_like(BROWSER_UA, cf_clearance=clearance) as http:
            page = await http.get(f"{sim.site}/items/{item}", follow_redirects=True)
        assert page.status_code == 200 and "application/ld+json" in page.text
        entries = [r for r in sim.app.log if r["cleared"]]
        assert entries and all(r["ua"] == BROWSER_UA and not r["challenged"] for r in entries)


async def test_forged_stale_and_wrong_user_agent_clearances_are_refused() -> None:
    async with two_origins(CHALLENGED) as sim:

        async def home(clearance: str, ua: str = BROWSER_UA) -> httpx.Response:
            return await _home(sim.site, clearance, ua)

        clearance = await _pass(sim.site, BROWSER_UA)
        ray, _, value = clearance.partition(".")
        assert is_challenge(await home(f"{ray}.{int(value) + 1}"))  # a wrong answer
        assert is_challenge(await home("0123456789abcdef01234567.42"))  # never issued
        assert is_challenge(await home(clearance, OTHER_UA))  # bound to the User-Agent
        assert (await home(clearance)).status_code == 200  # ... and still good for its own
        assert is_challenge(await home(clearance, OTHER_UA))  # even once it has been used

        await sim.side_door("challenge", {"revoke": True})  # every clearance forgotten
        assert is_challenge(await home(clearance))

        fresh = await _pass(sim.site, BROWSER_UA)
        assert (await home(fresh)).status_code == 200
        state = await sim.side_door("challenge", {"clearance_ttl": 0.3})
        assert state["www"] is True and state["clearance_ttl"] == 0.3 and state["cleared"] == 1
        with trio.fail_after(20):  # the clearance's age runs on the server's clock
            while (await home(fresh)).status_code == 200:
                await trio.sleep(0.05)
        assert is_challenge(await home(fresh))


async def test_the_side_door_switches_the_challenge_and_refuses_bad_knobs() -> None:
    config = SimulatorConfig(seed=31, n_listings=50, horizon_days=1.0, speed=1.0)
    async with two_origins(config) as sim, httpx.AsyncClient(timeout=10.0) as http:
        assert (await http.get(f"{sim.site}/")).status_code == 200  # off by default
        state = await sim.side_door("challenge")
        assert state == {"www": False, "clearance_ttl": 1800.0, "pending": 0, "cleared": 0}
        await sim.side_door("challenge", {"www": True})
        assert is_challenge(await http.get(f"{sim.site}/robots.txt"))
        for bad in ({"www": "yes"}, {"clearance_ttl": 0}, {"clearance_ttl": True}, {"x": 1},
                    {"revoke": 1}, [1]):  # fmt: skip
            refused = await http.post(f"{sim.site}/__sim__/challenge", json=bad)
            assert refused.status_code == 422, bad
        assert (await sim.side_door("challenge"))["clearance_ttl"] == 1800.0  # unchanged
        await sim.side_door("challenge", {"www": False})
        home = await http.get(f"{sim.site}/")
        assert home.status_code == 200 and "access_token_web" in home.cookies


async def test_tokens_are_jwts_without_the_challenge_too() -> None:
    config = SimulatorConfig(seed=31, n_listings=50, horizon_days=1.0, token_ttl=90.0)
    async with two_origins(config) as sim, httpx.AsyncClient(timeout=10.0) as http:
        home = await http.get(f"{sim.site}/")
        _, claims, _ = jwt_parts(home.cookies["access_token_web"])
        assert claims["iss"] == "vinted-iam-oauth" and claims["exp"] - claims["iat"] in (89, 90)
        assert claims["sub"] == home.cookies["anon_id"]
        async with browser_like(OTHER_UA) as other:
            second = await other.get(f"{sim.site}/")
        assert second.cookies["access_token_web"] != home.cookies["access_token_web"]


def test_issued_challenges_take_bounded_memory_and_spare_granted_clearances() -> None:
    gate = ChallengeGate(enabled=True, clearance_ttl=60.0)
    browser = solve(gate.issue(BROWSER_UA, 0.0).body.decode())
    assert gate.cleared(browser, BROWSER_UA, 1.0)
    for n in range(MAX_PENDING + 500):  # a client asking for challenges without end
        gate.issue(OTHER_UA, 2.0 + n * 1e-6)
    state: dict[str, Any] = gate.to_json()
    assert state["pending"] == MAX_PENDING and state["cleared"] == 1
    assert gate.cleared(browser, BROWSER_UA, 3.0)  # the browser's clearance survived the flood
    assert not gate.cleared(browser, BROWSER_UA, 61.0)  # ... until its time is up
    assert MAX_CLEARED <= 100_000
