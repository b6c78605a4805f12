"""Sessions from a real headless Chromium (`scrapers._browser`), over real loopback sockets:
a challenge site of the test's own (`_challenge_site`), Debian's chromium driven by
Playwright, the guard proxy between them. Tests that need chromium skip without it, unless CI
or NICHESCOPE_REQUIRE_BROWSER=1 is set (then they fail)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import trio

from scrapers import (
    DEFAULT_USER_AGENT,
    BrowserSessions,
    BrowserSettings,
    BrowserUnavailable,
    find_browser,
)
from scrapers._browser import CLOSE_GRACE, _usable_cookies
from scrapers._browser_driver import NOT_INSTALLED
from scrapers._browser_egress import EgressPolicy, host_refusal
from scrapers._browser_proxy import GuardProxy
from scrapers._browser_upstream import Upstream
from scrapers._sessions import MAX_COOKIE_BYTES, MAX_COOKIES, MarketSession
from scrapers.simulator import SimulatorConfig
from tests.waiting import eventually

from ._challenge_site import ChallengeSite, challenge_site
from ._servers import RawServer, fixed_response
from ._sim import simulator

# Debian's chromium, found as `NICHESCOPE_MARKET_BROWSER=auto` finds it.
CHROMIUM = shutil.which("chromium")
REQUIRE_BROWSER = bool(os.environ.get("NICHESCOPE_REQUIRE_BROWSER") == "1" or os.environ.get("CI"))


def require_chromium() -> str:
    reason = "chromium not found on the PATH (apt-get install chromium)"
    if CHROMIUM is None:
        if REQUIRE_BROWSER:
            pytest.fail(reason + "; required because CI or NICHESCOPE_REQUIRE_BROWSER=1 is set")
        pytest.skip(reason)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        if REQUIRE_BROWSER:
            pytest.fail("playwright is not installed (pip install -e '.[dev]')")
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    return CHROMIUM


def browser(**settings: object) -> BrowserSessions:
    values: dict[str, object] = {"mode": require_chromium(), "launch_timeout": 30.0}
    values.update(settings)
    return BrowserSessions(BrowserSettings(**values))  # type: ignore[arg-type]


def executable(tmp_path: Path, name: str = "chromium") -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/sh\nexit 1\n")
    path.chmod(0o755)
    return path


# -- settings: no browser needed ---------------------------------------------------------------


def test_find_browser_resolves_each_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_browser("off") is None
    fake = executable(tmp_path)
    assert find_browser(str(fake)) == str(fake)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_browser("auto") == str(fake)  # `chromium` on the PATH comes first
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "none"))
    assert find_browser("auto") is None  # and nothing is downloaded


@pytest.mark.parametrize("mode", ["/nonexistent/chromium", "chromium", "not-a-file"])
def test_a_bad_browser_path_is_refused_at_settings_time(mode: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="NICHESCOPE_MARKET_BROWSER"):
        BrowserSettings(mode=mode)
    plain = tmp_path / "plain"
    plain.write_text("")
    with pytest.raises(ValueError, match=r"NICHESCOPE_MARKET_BROWSER.*not an executable file"):
        BrowserSettings(mode=str(plain))


def test_bad_timeout_and_proxy_are_refused_without_echoing_secrets() -> None:
    with pytest.raises(ValueError, match="timeout"):
        BrowserSettings(launch_timeout=0)
    with pytest.raises(ValueError, match="NICHESCOPE_MARKET_PROXY") as refused:
        BrowserSettings(proxy="ftp://user:hunter2@proxy.example:21")
    assert "hunter2" not in str(refused.value)
    assert "hunter2" not in repr(BrowserSettings(proxy="http://user:hunter2@proxy.example:3128"))


async def test_off_means_no_browser() -> None:
    sessions = BrowserSessions(BrowserSettings(mode="off"))
    with pytest.raises(BrowserUnavailable) as failed:
        await sessions.open_session("http://127.0.0.1:9", allowed_origins=())
    assert str(failed.value) == "no browser configured (NICHESCOPE_MARKET_BROWSER=off)"
    assert sessions.launches == 0


async def test_auto_without_chromium_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "none"))
    with pytest.raises(BrowserUnavailable, match=r"^no chromium found"):
        await BrowserSessions().open_session("http://127.0.0.1:9", allowed_origins=())


async def test_without_playwright_the_extra_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)  # `import` now fails
    sessions = BrowserSessions(BrowserSettings(mode=str(executable(tmp_path))))
    with trio.fail_after(30), pytest.raises(BrowserUnavailable) as failed:
        await sessions.open_session("http://127.0.0.1:9", allowed_origins=())
    assert str(failed.value) == NOT_INSTALLED


# -- the egress policy and the guard proxy: no browser needed ----------------------------------


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("http://127.0.0.1:5000/any/path", True),  # the site (allowlisted)
        ("https://challenges.vendor.example.com/turnstile.js", True),  # a public https host
        ("http://localhost:5000/", False),
        ("http://127.0.0.1:5001/", False),  # another port of an allowlisted host
        ("http://10.0.0.1/", False),
        ("https://169.254.169.254/latest/meta-data/", False),
        ("https://[::1]/", False),
        ("https://[fd00::1]/", False),
        ("https://93.184.215.14/", False),  # an IP literal, even a public one
        ("https://0x7f.1/", False),
        ("https://printer.local/", False),
        ("https://intranet/", False),
        ("http://public.example.org/", False),  # plain http to a host not allowlisted
        ("https://public.example.org:8443/", False),
        ("ftp://public.example.org/", False),
        ("file:///etc/passwd", False),
    ],
)
def test_the_egress_policy(url: str, allowed: bool) -> None:
    policy = EgressPolicy.for_site("http://127.0.0.1:5000", ())
    assert (policy.url_refusal(url) is None) is allowed


async def proxy_answer(proxy_url: str, request: bytes) -> bytes:
    address = urlsplit(proxy_url)
    stream = await trio.open_tcp_stream(address.hostname or "", address.port or 0)
    async with stream:
        await stream.send_all(request)
        answer = b""
        while chunk := await stream.receive_some(65536):
            answer += chunk
        return answer


async def test_the_guard_proxy_refuses_private_targets_and_forwards_allowlisted_ones(
    nursery: trio.Nursery,
) -> None:
    canary = RawServer(fixed_response("200 OK", body=b"canary"))
    await nursery.start(canary.serve)
    port = urlsplit(canary.origin).port

    async def rebinding(host: str, port: int) -> list[str]:
        return ["93.184.215.14", "127.0.0.1"]  # one public address and one that is not

    policy = EgressPolicy.for_site("http://127.0.0.1:1", ())
    guard = GuardProxy(policy, resolver=rebinding)
    proxy_url = await nursery.start(guard.serve)
    with trio.fail_after(30):
        connect = f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode()
        tunnel = await proxy_answer(proxy_url, connect)
        renamed = await proxy_answer(proxy_url, b"CONNECT rebound.example.com:443 HTTP/1.1\r\n\r\n")
        plain = await proxy_answer(
            proxy_url, f"GET {canary.origin}/x HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        )
    assert tunnel.startswith(b"HTTP/1.1 403") and renamed.startswith(b"HTTP/1.1 403")
    assert plain.startswith(b"HTTP/1.1 403")
    assert canary.hits == 0
    assert ("rebound.example.com:443", "resolves to a non-public address (127.0.0.1)") in (
        guard.refused
    )
    # The same canary, allowlisted, is reached through the same proxy: the refusals above
    # were the policy's, not a proxy that forwards nothing.
    allowing = GuardProxy(EgressPolicy.for_site(canary.origin, ()), resolver=rebinding)
    allowing_url = await nursery.start(allowing.serve)
    with trio.fail_after(30):
        forwarded = await proxy_answer(
            allowing_url, f"GET {canary.origin}/x HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        )
    assert forwarded.startswith(b"HTTP/1.1 200") and forwarded.endswith(b"canary")
    assert canary.paths == ["/x"]


# -- a real browser ----------------------------------------------------------------------------


async def test_the_session_is_the_browsers() -> None:
    sessions = browser()
    async with challenge_site() as site:
        with trio.fail_after(90):
            session = await sessions.open_session(site.origin, allowed_origins=(site.origin,))
    [(visitor_id, visitor)] = site.visitors.items()
    assert session.source == "browser" and session.site == site.origin
    assert session.token == visitor.token
    assert session.anon_id == f"anon-{visitor_id}"
    assert session.cookie("cf_clearance") == visitor.clearance
    assert session.cookie("__cf_bm")
    assert session.expires_at == site.exp
    # The clearance is bound to the User-Agent the site saw, and that is a non-headless one.
    agent = session.user_agent
    assert agent is not None and agent == visitor.user_agent
    assert "Chrome/" in agent and "Headless" not in agent
    assert site.events == [("start", visitor_id), ("token", visitor_id)]


async def test_one_launch_at_a_time() -> None:
    sessions = browser()
    got: list[MarketSession] = []
    async with challenge_site() as site:
        with trio.fail_after(150):
            async with trio.open_nursery() as nursery:
                for _ in range(2):
                    nursery.start_soon(_open_into, got, sessions, site)
    assert len(got) == 2 and got[0].token != got[1].token
    assert [kind for kind, _ in site.events] == ["start", "token", "start", "token"]
    assert site.overlap() == 1
    assert sessions.launches == 2


async def _open_into(
    got: list[MarketSession], sessions: BrowserSessions, site: ChallengeSite
) -> None:
    got.append(await sessions.open_session(site.origin, allowed_origins=(site.origin,)))


async def test_a_page_that_never_hands_a_token_times_out() -> None:
    sessions = browser(launch_timeout=8.0)
    async with challenge_site(hand_token=False) as site:
        started = trio.current_time()
        with trio.fail_after(8 + CLOSE_GRACE + 30), pytest.raises(BrowserUnavailable) as failed:
            await sessions.open_session(site.origin, allowed_origins=(site.origin,))
        took = trio.current_time() - started
    assert str(failed.value) == "the browser got no session within 8 s"
    assert 8 <= took < 8 + CLOSE_GRACE
    assert len(site.visitors) == 1  # it did pass the challenge: only the token never came


@pytest.mark.parametrize("canary_allowlisted", [False, True])
async def test_the_page_never_reaches_a_private_address(
    canary_allowlisted: bool, nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="scrapers")
    canary = RawServer(fixed_response("200 OK", {"Content-Type": "text/plain"}, b"canary"))
    await nursery.start(canary.serve)
    port = urlsplit(canary.origin).port
    probes = (
        f"http://localhost:{port}/by-name",  # refused by the router
        f"{canary.origin}/by-address",  # refused by the router
        "/hop/0",  # the site's redirect: the router never sees the hop, the guard proxy does
        "http://10.0.0.1/",
    )
    sessions = browser()
    async with challenge_site(probes=probes, redirects=(f"{canary.origin}/redirected",)) as site:
        allowed = (site.origin, canary.origin) if canary_allowlisted else (site.origin,)
        with trio.fail_after(90):
            session = await sessions.open_session(site.origin, allowed_origins=allowed)
    assert session.token and len(site.probe_reports) == 1  # the page made its probes
    logged = caplog.text
    assert "refused" in logged and "10.0.0.1" in logged and f"localhost:{port}" in logged
    if canary_allowlisted:
        assert sorted(canary.paths) == ["/by-address", "/redirected"]
    else:
        assert canary.hits == 0
        assert f"127.0.0.1:{port}/redirected" in logged  # the guard proxy's refusal


@dataclass
class ForwardProxy:
    """The operator's egress proxy, as a test sees it: absolute-form requests, one per
    connection, forwarded with `Connection: close` and recorded."""

    urls: list[str] = field(default_factory=list)
    url: str = ""

    async def _handle(self, client: trio.SocketStream) -> None:
        # A browser may drop a connection at any point (a speculative connection it never
        # uses, a page it has finished with): a real proxy just lets it go, and so does this.
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self._forward(client)

    async def _forward(self, client: trio.SocketStream) -> None:
        async with client:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = await client.receive_some(65536)
                if not chunk:  # closed before its request was whole
                    return
                head += chunk
            line, _, rest = head.partition(b"\r\n")
            method, target, _version = line.decode().split(" ")
            self.urls.append(target)
            if method == "CONNECT":
                await client.send_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                return
            parts = urlsplit(target)
            upstream = await trio.open_tcp_stream(parts.hostname or "", parts.port or 80)
            async with upstream:
                path = f"{method} {parts.path or '/'} HTTP/1.1\r\n".encode()
                await upstream.send_all(path + rest)
                while chunk := await upstream.receive_some(65536):
                    await client.send_all(chunk)

    async def serve(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        task_status.started(self.url)
        await trio.serve_listeners(self._handle, listeners)


async def test_the_browser_leaves_through_the_egress_proxy(nursery: trio.Nursery) -> None:
    egress = ForwardProxy()
    await nursery.start(egress.serve)
    sessions = browser(proxy=egress.url)
    async with challenge_site() as site:
        with trio.fail_after(90):
            session = await sessions.open_session(site.origin, allowed_origins=(site.origin,))
    assert session.token
    assert egress.urls.count(f"{site.origin}/") >= 2  # the challenge, then the cleared home page
    # Anything else was a tunnel to a public https host (Chromium's own update and account
    # services ask at start-up; a page may load scripts from such hosts too).
    others = [url for url in egress.urls if not url.startswith(site.origin + "/")]
    assert all(url.endswith(":443") and not host_refusal(url[:-4]) for url in others), others


async def test_the_simulators_challenge_is_passed_and_bound_to_the_browsers_user_agent() -> None:
    sessions = browser()
    config = SimulatorConfig(seed=3, n_listings=20, profile="2026-09", challenge_www=True)
    async with simulator(config) as sim:
        with trio.fail_after(90):
            session = await sessions.open_session(sim.origin, allowed_origins=(sim.origin,))
        assert session.token and session.cookie("cf_clearance") and session.expires_at
        assert session.user_agent
        async with httpx.AsyncClient(base_url=sim.origin, trust_env=False) as plain:
            cookie = {"Cookie": session.cookie_header()}
            home = await plain.get("/", headers={**cookie, "User-Agent": session.user_agent})
            other = await plain.get("/", headers={**cookie, "User-Agent": DEFAULT_USER_AGENT})
    assert home.status_code == 200 and "cf-mitigated" not in home.headers
    assert other.status_code == 403 and other.headers["cf-mitigated"] == "challenge"


@dataclass
class FakeUpstream:
    """An egress proxy that accepts one tunnel per connection (socks5, or http `CONNECT`),
    records what it was asked, then echoes what comes through the tunnel."""

    kind: str  # "socks5" or "http"
    asked: list[bytes] = field(default_factory=list)
    url: str = ""

    async def _handle(self, client: trio.SocketStream) -> None:
        async with client:
            if self.kind == "socks5":
                self.asked.append(await client.receive_some(64))  # greeting
                await client.send_all(b"\x05\x02")  # username and password, please
                self.asked.append(await client.receive_some(512))  # credentials
                await client.send_all(b"\x01\x00")
                self.asked.append(await client.receive_some(512))  # the CONNECT request
                await client.send_all(b"\x05\x00\x00\x01" + bytes(4) + b"\x00\x00")
            else:
                self.asked.append(await client.receive_some(4096))
                await client.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            while chunk := await client.receive_some(4096):
                await client.send_all(chunk)

    async def serve(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        self.url = f"{self.kind}://user:s3cret@127.0.0.1:{port}"
        task_status.started(self.url)
        await trio.serve_listeners(self._handle, listeners)


async def tunnel_through(proxy_url: str, target: str) -> bytes:
    """The guard proxy's answer to `CONNECT target`, then (when it is a 200) what comes back
    through the tunnel after sending `ping`."""
    address = urlsplit(proxy_url)
    stream = await trio.open_tcp_stream(address.hostname or "", address.port or 0)
    async with stream:
        await stream.send_all(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        answer = b""
        while b"\r\n\r\n" not in answer and (chunk := await stream.receive_some(4096)):
            answer += chunk
        if answer.startswith(b"HTTP/1.1 200"):
            await stream.send_all(b"ping")
            while not answer.endswith(b"ping") and (chunk := await stream.receive_some(4096)):
                answer += chunk
        return answer


@pytest.mark.parametrize("kind", ["socks5", "http"])
async def test_tunnels_leave_through_the_egress_proxy(kind: str, nursery: trio.Nursery) -> None:
    egress = FakeUpstream(kind)
    await nursery.start(egress.serve)

    async def resolver(host: str, port: int) -> list[str]:
        if host == "inside.example.com":
            return ["10.1.2.3"]
        raise OSError("unknown here: the egress proxy resolves it")

    upstream = Upstream.parse(egress.url)
    guard = GuardProxy(EgressPolicy.for_site("http://127.0.0.1:1", ()), upstream, resolver)
    proxy_url = await nursery.start(guard.serve)
    with trio.fail_after(30):
        through = await tunnel_through(proxy_url, "public.example.com:443")
        inside = await tunnel_through(proxy_url, "inside.example.com:443")
    assert through.startswith(b"HTTP/1.1 200") and through.endswith(b"ping")  # echoed back
    assert inside.startswith(b"HTTP/1.1 403")  # a name that resolves here to a private address
    asked = b"".join(egress.asked)
    assert b"public.example.com" in asked and b"inside.example.com" not in asked
    if kind == "socks5":
        assert egress.asked[1] == b"\x01\x04user\x06s3cret"
        assert egress.asked[2] == b"\x05\x01\x00\x03\x12public.example.com\x01\xbb"
    else:
        assert b"Proxy-Authorization: Basic dXNlcjpzM2NyZXQ=" in asked


async def test_cancelling_stops_the_browser_and_frees_the_next_launch() -> None:
    sessions = browser()
    async with challenge_site(hand_token=False) as site:
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    lambda: sessions.open_session(site.origin, allowed_origins=(site.origin,))
                )
                await eventually(lambda: len(site.probe_reports) == 1, within=60)
                cancelled_at = trio.current_time()
                scope.cancel()
        # The thread saw the cancellation and closed the browser: the shielded wait for it
        # ended well before its grace ran out (and far before the session's 30 s).
        assert trio.current_time() - cancelled_at < CLOSE_GRACE / 2
    async with challenge_site() as site:
        with trio.fail_after(90):  # the lock was released: the next launch goes ahead
            session = await sessions.open_session(site.origin, allowed_origins=(site.origin,))
    assert session.token and sessions.launches == 2


def test_only_cookies_that_fit_a_header_are_kept_essential_ones_first() -> None:
    jar = (
        *((f"c{i}", "v" * 100) for i in range(60)),
        ("smuggle", "a\r\nX-Evil: 1"),
        ("comma", "a,b"),
        ("access_token_web", "token"),
        ("cf_clearance", "clearance"),
    )
    kept = dict(_usable_cookies(jar))
    assert list(kept)[:2] == ["access_token_web", "cf_clearance"]
    assert "smuggle" not in kept and "comma" not in kept
    assert len(kept) <= MAX_COOKIES and sum(len(k) + len(v) + 2 for k, v in kept.items()) <= (
        MAX_COOKIE_BYTES
    )
