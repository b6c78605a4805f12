"""The egress proxy (`ClientSettings.proxy`, `NICHESCOPE_MARKET_PROXY`): marketplace traffic
really goes through it, the SSRF guard still refuses what it refused before anything reaches
the proxy (redirects included), a proxy that is down fails closed, and its credentials are
never echoed by the configuration."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest
import trio

from api.settings import ConfigError, Settings
from scrapers import (
    ClientSettings,
    ItemState,
    MarketClient,
    MarketplaceAdapter,
    MarketplaceUnavailable,
    UrlRefused,
)
from scrapers.simulator import SimulatorConfig

from ._servers import RawServer, fixed_response
from ._sim import simulator

_HOP_BY_HOP = (b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization")


@dataclass
class ForwardProxy:
    """A minimal HTTP forward proxy on loopback: one absolute-form GET per connection, sent on
    to its target in origin form with `Connection: close`, the answer relayed until EOF."""

    urls: list[str] = field(default_factory=list)  # every absolute URL asked, in order
    auth: list[str] = field(default_factory=list)  # Proxy-Authorization values received
    connections: int = 0
    url: str = ""

    async def _handle(self, downstream: trio.SocketStream) -> None:
        self.connections += 1
        try:
            with trio.fail_after(10):
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = await downstream.receive_some(65536)
                    if not chunk:
                        return
                    head += chunk
                request_line, *lines = head.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
                method, target, version = request_line.decode("latin-1").split(" ")
                self.urls.append(target)
                parts = urlsplit(target)
                assert parts.scheme == "http" and parts.hostname and parts.port
                kept = []
                for line in lines:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"proxy-authorization":
                        self.auth.append(value.strip().decode("latin-1"))
                    if name.strip().lower() not in _HOP_BY_HOP:
                        kept.append(line)
                path = parts.path + (f"?{parts.query}" if parts.query else "")
                forwarded = [f"{method} {path or '/'} {version}".encode(), *kept]
                forwarded.append(b"Connection: close")
                upstream = await trio.open_tcp_stream(parts.hostname, parts.port)
                async with upstream:
                    await upstream.send_all(b"\r\n".join(forwarded) + b"\r\n\r\n")
                    answer = b""
                    while chunk := await upstream.receive_some(65536):
                        answer += chunk
            await downstream.send_all(_closing(answer))
        except trio.BrokenResourceError:
            pass  # the client stopped reading (an item page read only up to its JSON-LD)
        finally:
            await downstream.aclose()

    async def serve(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, self._handle, listeners)
            task_status.started(self.url)


def _closing(answer: bytes) -> bytes:
    """The upstream answer with its own connection headers replaced by `Connection: close`."""
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.split(b"\r\n")
    kept = [line for line in lines if line.partition(b":")[0].strip().lower() not in _HOP_BY_HOP]
    return b"\r\n".join([status, *kept, b"Connection: close"]) + b"\r\n\r\n" + body


@asynccontextmanager
async def forward_proxy() -> AsyncIterator[ForwardProxy]:
    proxy = ForwardProxy()
    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.serve)
        yield proxy
        nursery.cancel_scope.cancel()


def _with_credentials(url: str, user: str, password: str) -> str:
    return url.replace("http://", f"http://{user}:{password}@", 1)


async def test_market_traffic_goes_through_the_proxy_and_the_guard_still_refuses() -> None:
    redirector = RawServer(
        fixed_response("302 Found", {"Location": "http://169.254.169.254/latest/meta-data/"})
    )
    async with (
        simulator(SimulatorConfig(seed=3, profile="legacy", n_listings=60)) as sim,
        forward_proxy() as proxy,
        trio.open_nursery() as nursery,
    ):
        await nursery.start(redirector.serve)
        settings = ClientSettings(
            extra_origins=(sim.origin, redirector.origin),
            proxy=_with_credentials(proxy.url, "ops", "s3cret"),
            rate=0,
            respect_robots=False,
            max_retries=0,
        )
        async with MarketClient(settings) as client:
            adapter = MarketplaceAdapter(client, profile="legacy")
            query = await adapter.query_for(f"{sim.origin}/catalog?catalog[]=1904")
            page = await adapter.fetch_catalogue_page(query)
            assert page.listings
            item_id = page.listings[0].id
            detail = await adapter.fetch_item_detail(sim.origin, item_id)
            assert detail.state is ItemState.OPEN and detail.evidence == "detail_api"

            # Everything the simulator answered came through the proxy, and nothing else.
            assert f"{sim.origin}/" in proxy.urls  # the session warm-up
            assert any(u.startswith(f"{sim.origin}/api/v2/catalog/items?") for u in proxy.urls)
            assert f"{sim.origin}/api/v2/items/{item_id}/details" in proxy.urls
            reached = [
                f"{sim.origin}{r['path']}" + (f"?{r['query']}" if r["query"] else "")
                for r in sim.app.log
            ]
            assert reached == proxy.urls
            # The proxy's credentials were offered to the proxy (and it does not pass them on).
            basic = base64.b64encode(b"ops:s3cret").decode()
            assert proxy.auth and set(proxy.auth) == {f"Basic {basic}"}

            # The guard refuses before any connection to the proxy is even opened.
            seen, connections = list(proxy.urls), proxy.connections
            for refused in (
                "http://127.0.0.2:1/catalog",
                "http://169.254.169.254/latest/meta-data/",
                "http://localhost:1/catalog",
                f"{sim.origin.replace('http://', 'http://u:p@')}/catalog",
            ):
                with pytest.raises(UrlRefused):
                    await client.get(refused)
            with pytest.raises(UrlRefused):
                await adapter.query_for("http://169.254.169.254/catalog?catalog[]=1")
            assert proxy.urls == seen and proxy.connections == connections

            # A redirect is checked by the client too: the allowlisted origin's 302 towards
            # the metadata address is refused, and the proxy is never asked for it.
            with pytest.raises(UrlRefused, match="redirect refused"):
                await client.get(f"{redirector.origin}/items/1")
            assert proxy.urls == [*seen, f"{redirector.origin}/items/1"]
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("proxy", ["http://127.0.0.1:1", "socks5://127.0.0.1:1"])
async def test_a_proxy_that_is_down_fails_closed(proxy: str) -> None:
    """No fallback to a direct connection: the request fails and the market sees nothing.
    A SOCKS5 proxy builds a client too (nobody listens there either)."""
    if proxy.startswith("socks5:"):
        pytest.importorskip("socksio")
    async with simulator(SimulatorConfig(seed=3, profile="legacy", n_listings=20)) as sim:
        settings = ClientSettings(
            extra_origins=(sim.origin,), proxy=proxy, rate=0, respect_robots=False, max_retries=0,
        )  # fmt: skip
        async with MarketClient(settings) as client:
            with pytest.raises(MarketplaceUnavailable):
                await client.get(f"{sim.origin}/catalog")
        assert sim.app.log == []


# -- NICHESCOPE_MARKET_PROXY ------------------------------------------------------------------

_KEY = {"NICHESCOPE_SECRET_KEY": "k" * 40}


@pytest.mark.parametrize(
    "value",
    [
        "http://proxy.internal:3128",
        "http://user:secret@proxy.internal:3128",
        "https://user:secret@proxy.internal:443",
        "socks5://user:secret@127.0.0.1:1080",
        "socks5h://proxy.internal:1080",
    ],
)
def test_proxy_setting_accepted_and_kept_out_of_repr(value: str) -> None:
    settings = Settings.from_env({**_KEY, "NICHESCOPE_MARKET_PROXY": f" {value} "})
    assert settings.market_proxy == value
    assert "secret" not in repr(settings)


def test_proxy_setting_defaults_to_none() -> None:
    assert Settings.from_env({**_KEY, "NICHESCOPE_MARKET_PROXY": ""}).market_proxy == ""


@pytest.mark.parametrize(
    "value",
    [
        "ftp://x",
        "ftp://user:secret@proxy.internal:21",
        "http://user:secret@",
        "user:secret@proxy.internal:3128",
        "file:///secret",
        "http://user:secret@[::1",
        "http://user:secret@proxy.internal:99999",
    ],
)
def test_invalid_proxy_setting_refused_without_echoing_it(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({**_KEY, "NICHESCOPE_MARKET_PROXY": value})
    message = str(caught.value)
    assert "NICHESCOPE_MARKET_PROXY" in message
    assert "secret" not in message and "secret" not in repr(caught.value.args)
