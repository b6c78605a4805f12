"""The guard proxy: the browser's only way out.

Playwright's router (`context.route`) sees the requests a page makes, but not the hops of a
redirect (a public host answering `302 Location: http://10.0.0.1/` would take the browser
there), nor WebSockets, preconnects or some workers' traffic. So the browser is launched with
this proxy, on loopback, as its proxy server for every host, loopback included
(`<-loopback>`), and resolves no host name itself: each connection it opens arrives here as a
`CONNECT host:port` (https, wss) or an absolute-form request (plain http), is checked against
the session's `EgressPolicy`, and is refused with a `403` or connected:

- a public host name is resolved here and refused when any of its addresses is not public;
  the connection goes to an address that was checked (no second lookup to rebind);
- an allowlisted origin is connected as the operator named it;
- with an egress proxy (`_browser_upstream`) every connection goes through it (the proxy
  resolves; a name that resolves here to a non-public address is still refused).

Plain http is forwarded one request per connection (`Connection: close`). A proxy serves one
browser session and is cancelled with it: every relay ends then.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import urlsplit

import trio

from ._browser_egress import EgressPolicy, address_refusal
from ._browser_upstream import Upstream
from ._ssrf import Resolver, system_resolver

log = logging.getLogger(__name__)

HEAD_LIMIT = 32_768
HEAD_TIMEOUT = 15.0
CONNECT_TIMEOUT = 15.0
MAX_CONNECTIONS = 64
LOGGED_REFUSALS = 50  # per session: a page that asks for thousands must not flood the logs
_HOP_HEADERS = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"te"}
)


class Refused(Exception):
    """A connection the policy refuses: `reason` says why (logged, and sent in the 403)."""

    def __init__(self, target: str, reason: str) -> None:
        super().__init__(f"{target}: {reason}")
        self.target = target
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Request:
    method: str
    target: str
    headers: tuple[tuple[bytes, bytes], ...]


class GuardProxy:
    """One session's guard proxy. `refused` lists the first refusals (target and reason) and
    `refusals` counts them all."""

    def __init__(
        self,
        policy: EgressPolicy,
        upstream: Upstream | None = None,
        resolver: Resolver = system_resolver,
    ) -> None:
        self.policy = policy
        self.upstream = upstream
        self.refused: list[tuple[str, str]] = []
        self.refusals = 0
        self._resolve = resolver
        self._limit = trio.CapacityLimiter(MAX_CONNECTIONS)

    async def serve(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on an ephemeral loopback port, `task_status.started(proxy_url)` once
        listening, serve until cancelled. `OSError` if it cannot listen; a connection that
        fails ends alone (logged), never the proxy."""
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        task_status.started(f"http://127.0.0.1:{port}")
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, client: trio.SocketStream) -> None:
        async with client, self._limit:
            try:
                await self._serve_one(client)
            except Refused as refusal:
                self.refusals += 1
                if len(self.refused) < LOGGED_REFUSALS:
                    self.refused.append((refusal.target, refusal.reason))
                    log.info("browser connection refused (%s): %s", refusal.reason, refusal.target)
                await _answer(client, b"403 Forbidden", refusal.reason)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as err:
                log.debug("browser connection failed: %s", err)
                await _answer(client, b"502 Bad Gateway", "")
            except trio.TooSlowError:
                await _answer(client, b"504 Gateway Timeout", "")
            except Exception:  # one connection's bug must not end the session's proxy
                log.exception("browser guard proxy: a connection failed")

    async def _serve_one(self, client: trio.SocketStream) -> None:
        with trio.fail_after(HEAD_TIMEOUT):
            head, rest = await _read_head(client)
        request = _parse(head)
        if request.method == "CONNECT":
            host, port = _authority(request.target)
            target = f"{host}:{port}"
            reason = self.policy.tunnel_refusal(host, port)
            if reason is not None:
                raise Refused(target, reason)
            with trio.fail_after(CONNECT_TIMEOUT):
                upstream, early = await self._open(host, port, explicit=self._explicit(host, port))
            async with upstream:
                await client.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n" + early)
                await _relay(client, upstream, rest)
            return
        await self._forward(client, request, rest)

    async def _forward(self, client: trio.SocketStream, request: _Request, rest: bytes) -> None:
        reason = self.policy.url_refusal(request.target)
        parts = urlsplit(request.target)
        if reason is None and parts.scheme.lower() != "http":
            reason = "not an absolute http URL"
        if reason is not None:
            raise Refused(request.target[:200], reason)
        host, port = parts.hostname or "", parts.port or 80
        via_proxy = self.upstream is not None and self.upstream.speaks_http
        with trio.fail_after(CONNECT_TIMEOUT):
            if via_proxy:
                assert self.upstream is not None
                upstream: trio.abc.Stream = await self.upstream.connect()
                early = b""
            else:
                upstream, early = await self._open(host, port, explicit=True)
        target = (
            request.target
            if via_proxy
            else (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        )
        auth = self.upstream.authorization() if via_proxy and self.upstream else b""
        async with upstream:
            await client.send_all(early)
            await upstream.send_all(_head_out(request, target, auth) + rest)
            await _relay(client, upstream, b"")

    def _explicit(self, host: str, port: int) -> bool:
        return self.policy.allows("https", host, port) or self.policy.allows("http", host, port)

    async def _open(self, host: str, port: int, *, explicit: bool) -> tuple[trio.abc.Stream, bytes]:
        """A stream to `host:port` (and bytes already read from it). A host that is not
        allowlisted is resolved and checked first; without an egress proxy the connection goes
        to an address that passed. `Refused`, `OSError`."""
        addresses: list[str] = []
        if not explicit:
            addresses = await self._checked(host, port)
        if self.upstream is not None:
            return await self.upstream.tunnel(host, port)
        if explicit:
            return await trio.open_tcp_stream(host, port), b""
        failure: OSError = OSError(f"no address of {host} answered")
        for address in addresses:
            try:
                return await trio.open_tcp_stream(address, port), b""
            except OSError as err:
                failure = err
        raise failure

    async def _checked(self, host: str, port: int) -> list[str]:
        try:
            addresses = await self._resolve(host, port)
        except OSError as err:
            if self.upstream is not None:
                return []  # the egress proxy resolves names this machine may not know
            raise Refused(f"{host}:{port}", f"does not resolve ({err})") from err
        for address in addresses:
            reason = address_refusal(address)
            if reason is not None:
                raise Refused(f"{host}:{port}", f"resolves to {reason}")
        if not addresses and self.upstream is None:
            raise Refused(f"{host}:{port}", "resolves to no address")
        return addresses


async def _read_head(stream: trio.SocketStream) -> tuple[bytes, bytes]:
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > HEAD_LIMIT:
            raise OSError("request head too long")
        chunk = await stream.receive_some(8192)
        if not chunk:
            raise OSError("the browser closed the connection")
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    return head, rest


def _parse(head: bytes) -> _Request:
    line, *lines = head.split(b"\r\n")
    try:
        method, target, _version = line.decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        raise Refused(line[:100].decode("latin-1"), "not an HTTP proxy request") from None
    headers = tuple(
        (name.strip(), value.strip())
        for name, sep, value in (h.partition(b":") for h in lines)
        if sep
    )
    return _Request(method.upper(), target, headers)


def _authority(target: str) -> tuple[str, int]:
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host or not 0 < int(port) < 65536:
        raise Refused(target[:200], "not a host:port")
    return host.strip("[]").lower(), int(port)


def _head_out(request: _Request, target: str, auth: bytes) -> bytes:
    lines = [f"{request.method} {target} HTTP/1.1".encode()]
    lines += [n + b": " + v for n, v in request.headers if n.lower() not in _HOP_HEADERS]
    return b"\r\n".join(lines) + b"\r\n" + auth + b"Connection: close\r\n\r\n"


async def _relay(client: trio.abc.Stream, upstream: trio.abc.Stream, first: bytes) -> None:
    """Copy bytes both ways (`first` to the upstream first) until either side closes."""

    async def copy(source: trio.abc.Stream, sink: trio.abc.Stream, done: trio.CancelScope) -> None:
        try:
            while chunk := await source.receive_some(65536):
                await sink.send_all(chunk)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass  # either side hung up: the connection is over
        done.cancel()

    if first:
        await upstream.send_all(first)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(copy, client, upstream, nursery.cancel_scope)
        nursery.start_soon(copy, upstream, client, nursery.cancel_scope)


async def _answer(client: trio.SocketStream, status: bytes, reason: str) -> None:
    body = reason.encode()
    head = b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    try:
        with trio.move_on_after(2):
            await client.send_all(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
