"""Sessions: what a pasted or handed-over session must be, when it is renewed, which source a
site's session comes from (the vault, the plain warm-up, the browser) and that a challenge is
never taken for a block."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
import trio

from scrapers import (
    ChallengeRequired,
    MarketSession,
    NoSession,
    SessionRefused,
    operator_session,
    parse_cookie_text,
    session_from_cookies,
)
from scrapers._challenge import is_challenge
from scrapers._site_sessions import NO_BROWSER, SiteSessions
from scrapers.errors import BrowserUnavailable

SITE = "https://www.vinted.fr"


def jwt(**claims: Any) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


def session(source: str = "warmup", *, life: float = 3600.0, token: str = "") -> MarketSession:
    now = time.time()
    opaque = bool(token)
    token = token or jwt(iss="vinted-iam-oauth", exp=now + life)
    return session_from_cookies(
        SITE,
        [("access_token_web", token)],
        source=source,
        now=now,  # type: ignore[arg-type]
        require_jwt=not opaque,
    )


def test_a_pasted_session_is_checked_and_its_expiry_read_from_the_token() -> None:
    exp = int(time.time()) + 86_400
    pasted = operator_session(
        "www.vinted.fr",
        f"access_token_web={jwt(exp=exp)}; anon_id=abc; cf_clearance=x.y-z",
        "Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0",
    )
    assert pasted.site == SITE and pasted.source == "operator"
    assert pasted.expires_at == exp and pasted.anon_id == "abc"
    assert pasted.user_agent == "Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0"
    # The API origin gets the token alone; the site every cookie.
    assert pasted.cookie_header(token_only=True) == f"access_token_web={jwt(exp=exp)}"
    assert "cf_clearance=x.y-z" in pasted.cookie_header()


@pytest.mark.parametrize(
    ("site", "cookie", "agent", "reason"),
    [
        ("www.vinted.fr", "access_token_web=opaque", None, "not a JWT"),
        ("www.vinted.fr", f"access_token_web={jwt(exp=1_000)}", None, "expired"),
        ("www.vinted.fr", f"access_token_web={jwt(iss='x')}", None, "no expiry"),
        ("www.vinted.fr", "anon_id=1", None, "no access_token_web"),
        ("www.vinted.fr", "access_token_web=a\r\nX-Evil: 1", None, "not a cookie"),
        ("www.vinted.fr", "access_token_web=a b", None, "not a cookie"),
        ("www.vinted.fr", f"access_token_web={jwt(exp=2e9)}", "agent\nX: 1", "User-Agent"),
        ("api.vinted.fr", f"access_token_web={jwt(exp=2e9)}", None, "not its API"),
        ("evil.example", f"access_token_web={jwt(exp=2e9)}", None, "not a marketplace"),
        ("127.0.0.1:8100", f"access_token_web={jwt(exp=2e9)}", None, "not a marketplace"),
        ("www.vinted.fr/items/1", f"access_token_web={jwt(exp=2e9)}", None, "own origin"),
    ],
)
def test_a_bad_pasted_session_is_refused_naming_why(
    site: str, cookie: str, agent: str | None, reason: str
) -> None:
    with pytest.raises(SessionRefused, match=reason):
        operator_session(site, cookie, agent)


def test_an_allowlisted_origin_is_named_by_its_host_and_port() -> None:
    pasted = operator_session(
        "127.0.0.1:8100",
        f"access_token_web={jwt(exp=2e9)}",
        allowed_origins=("http://127.0.0.1:8100",),
    )
    assert pasted.site == "http://127.0.0.1:8100"


def test_cookie_text_is_bounded() -> None:
    with pytest.raises(SessionRefused, match="more than 40 cookies"):
        parse_cookie_text("; ".join(f"c{i}=v" for i in range(41)))
    with pytest.raises(SessionRefused, match="longer than"):
        parse_cookie_text("a=" + "x" * 9000)


def test_renewal_is_due_ahead_of_expiry() -> None:
    long = session(life=86_400)  # renewed five minutes ahead
    assert not long.due(time.time() + 86_400 - 301) and long.due(time.time() + 86_400 - 299)
    short = session(life=40)  # a quarter of its life ahead
    assert not short.due(time.time() + 29) and short.due(time.time() + 31)
    opaque = session(token="opaque")  # a plain warm-up's token without a JWT: 401 renews it
    assert opaque.expires_at is None and not opaque.due(time.time() + 10**9)


@pytest.mark.parametrize(
    ("status", "headers", "body", "json_expected", "challenge"),
    [
        (403, {"cf-mitigated": "challenge"}, b"", False, True),
        (403, {"content-type": "text/html"}, b"<title>Just a moment...</title>", False, True),
        (403, {"content-type": "text/html"}, b"<script src='//captcha-delivery.com'>", False, True),
        (200, {"content-type": "text/html"}, b"<div id='cf_chl_opt'>", True, True),
        # A plain block page stays a block; a real page carrying the vendor's scripts is data.
        (403, {"content-type": "text/html"}, b"<h1>Access denied</h1>", False, False),
        (200, {"content-type": "text/html"}, b"/cdn-cgi/challenge-platform/x.js", False, False),
        (403, {"content-type": "application/json"}, b'{"code": 106}', True, False),
    ],
)
def test_a_challenge_is_told_from_a_block(
    status: int, headers: dict[str, str], body: bytes, json_expected: bool, challenge: bool
) -> None:
    assert is_challenge(status, headers, body, json_expected=json_expected) is challenge


class Vault:
    def __init__(self, stored: MarketSession | None = None) -> None:
        self.stored = stored
        self.saved: list[MarketSession] = []

    async def load(self, site: str) -> MarketSession | None:
        return self.stored

    async def save(self, session: MarketSession) -> None:
        self.saved.append(session)
        self.stored = session


class Browser:
    def __init__(self, *, fails: bool = False) -> None:
        self.launches = 0
        self.fails = fails

    async def open_session(
        self, site_origin: str, *, allowed_origins: tuple[str, ...]
    ) -> MarketSession:
        self.launches += 1
        await trio.sleep(1)  # a browser takes a while: concurrent callers must not relaunch
        if self.fails:
            raise BrowserUnavailable("the browser failed to start: boom")
        return session("browser")


def challenged_warm_up(calls: list[str]) -> Any:
    async def warm_up(site: str) -> MarketSession:
        calls.append(site)
        raise ChallengeRequired(site + "/", 403)

    return warm_up


async def test_a_challenged_site_gets_one_browser_session_shared_through_the_vault(
    autojump_clock: trio.abc.Clock,
) -> None:
    warm_ups: list[str] = []
    vault, browser = Vault(), Browser()
    sessions = SiteSessions(warm_up=challenged_warm_up(warm_ups), browser=browser, vault=vault)
    got: list[MarketSession] = []

    async def ask() -> None:
        got.append(await sessions.obtain(SITE, stale=None))

    async with trio.open_nursery() as nursery:
        for _ in range(5):
            nursery.start_soon(ask)
    assert browser.launches == 1 and len(warm_ups) == 1
    assert {s.source for s in got} == {"browser"} and len({s.token for s in got}) == 1
    assert vault.saved == [got[0]]  # shared with the other nodes
    assert sessions.report(SITE).state.startswith("browser session until")
    # Challenged again on its cookies: one new launch, no plain warm-up (the site is known
    # to challenge plain clients).
    await sessions.obtain(SITE, stale=got[0], why="challenged")
    assert browser.launches == 2 and len(warm_ups) == 1


async def test_a_session_from_another_node_is_used_before_any_launch(
    autojump_clock: trio.abc.Clock,
) -> None:
    shared = session("browser")
    browser = Browser()
    sessions = SiteSessions(warm_up=challenged_warm_up([]), browser=browser, vault=Vault(shared))
    assert await sessions.obtain(SITE, stale=None) == shared
    assert browser.launches == 0


async def test_without_a_browser_there_is_no_session_and_it_says_why(
    autojump_clock: trio.abc.Clock,
) -> None:
    sessions = SiteSessions(warm_up=challenged_warm_up([]), browser=None, vault=Vault())
    with pytest.raises(NoSession) as refused:
        await sessions.obtain(SITE, stale=None)
    assert refused.value.reason == NO_BROWSER
    report = sessions.report(SITE)
    assert report.state == "challenged, no session" and report.without_since is not None


async def test_a_failing_browser_backs_off_instead_of_relaunching(
    autojump_clock: trio.abc.Clock,
) -> None:
    browser = Browser(fails=True)
    sessions = SiteSessions(warm_up=challenged_warm_up([]), browser=browser)
    for _ in range(5):
        with pytest.raises(NoSession, match="boom"):
            await sessions.obtain(SITE, stale=None)
    assert browser.launches == 1  # the others waited for the backoff
    await trio.sleep(31)
    with pytest.raises(NoSession):
        await sessions.obtain(SITE, stale=None)
    assert browser.launches == 2
    await trio.sleep(31)  # the second failure doubled the wait to 60 s
    with pytest.raises(NoSession, match="next try in"):
        await sessions.obtain(SITE, stale=None)
    assert browser.launches == 2


async def test_a_session_due_for_renewal_is_kept_until_it_expires(
    autojump_clock: trio.abc.Clock,
) -> None:
    held = session("operator", life=100)  # no browser, and the operator's cannot be renewed
    sessions = SiteSessions(warm_up=challenged_warm_up([]), browser=None, vault=Vault(held))
    assert await sessions.obtain(SITE, stale=held) == held  # due (a quarter of its life left)
    with pytest.raises(NoSession):
        await sessions.obtain(SITE, stale=held, why="unauthorised")
