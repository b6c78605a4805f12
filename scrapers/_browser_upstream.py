"""The operator's egress proxy, as the browser's guard proxy reaches it.

The browser's clearance is bound to the egress address it was earned from, so when the operator
routes marketplace traffic through a proxy (`NICHESCOPE_MARKET_PROXY`) the browser's traffic
must leave through it too. The browser itself only ever talks to the guard proxy on loopback
(`_browser_proxy`); the guard opens its connections through this upstream: an http or https
proxy (`CONNECT`, or an absolute-form request for plain http), or a socks5 proxy (the host name
sent as is: the proxy resolves). The proxy's credentials stay here, never on the browser's
command line, and are never part of an error message.
"""

from __future__ import annotations

import base64
import ipaddress
import ssl
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

import trio

PROXY_ENV = "NICHESCOPE_MARKET_PROXY"
_SCHEMES = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}
_REPLY_LIMIT = 16_384


@dataclass(frozen=True, slots=True)
class Upstream:
    """An egress proxy: where it listens and how to authenticate (never shown by repr)."""

    scheme: str
    host: str
    port: int
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, url: str) -> Upstream:
        """`ValueError` naming the variable, never echoing the value (it may hold a password)."""
        problem = f"{PROXY_ENV}: expected an http://, https:// or socks5:// URL with a host"
        try:
            parts = urlsplit(url.strip())
            scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
        except ValueError:
            raise ValueError(problem) from None
        if scheme not in _SCHEMES or not host:
            raise ValueError(problem)
        user = None if parts.username is None else unquote(parts.username)
        secret = None if parts.password is None else unquote(parts.password)
        return cls(scheme, host, port or _SCHEMES[scheme], user, secret)

    @property
    def speaks_http(self) -> bool:
        return self.scheme in ("http", "https")

    def authorization(self) -> bytes:
        """The `Proxy-Authorization` header line (CRLF included), or nothing."""
        if self.username is None:
            return b""
        pair = f"{self.username}:{self.password or ''}".encode()
        return b"Proxy-Authorization: Basic " + base64.b64encode(pair) + b"\r\n"

    async def connect(self) -> trio.abc.Stream:
        """A connection to the proxy itself (TLS for an https proxy); `OSError` on failure."""
        stream: trio.abc.Stream = await trio.open_tcp_stream(self.host, self.port)
        if self.scheme == "https":
            tls = trio.SSLStream(stream, ssl.create_default_context(), server_hostname=self.host)
            try:
                await tls.do_handshake()
            except trio.BrokenResourceError as err:
                await stream.aclose()
                raise OSError(f"no TLS with the egress proxy: {err.__cause__ or err}") from err
            stream = tls
        return stream

    async def tunnel(self, host: str, port: int) -> tuple[trio.abc.Stream, bytes]:
        """A byte stream to `host:port` through the proxy, and what the proxy sent past its
        answer. `OSError` when the proxy refuses or fails; the stream is closed then."""
        stream = await self.connect()
        try:
            if self.speaks_http:
                rest = await _http_connect(stream, host, port, self.authorization())
            else:
                rest = await _socks5_connect(stream, host, port, self.username, self.password)
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise
        return stream, rest


async def _http_connect(stream: trio.abc.Stream, host: str, port: int, auth: bytes) -> bytes:
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    await stream.send_all(
        f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n".encode() + auth + b"\r\n"
    )
    reply = _Reader(stream)
    head = await reply.until(b"\r\n\r\n")
    status = head.split(b" ", 2)[1] if head.count(b" ") >= 1 else b"?"
    if status != b"200":
        raise OSError(f"the egress proxy refused the tunnel ({status.decode('latin-1')})")
    return reply.buffer


async def _socks5_connect(
    stream: trio.abc.Stream, host: str, port: int, user: str | None, secret: str | None
) -> bytes:
    reply = _Reader(stream)
    await stream.send_all(b"\x05\x02\x00\x02" if user is not None else b"\x05\x01\x00")
    version, method = await reply.exactly(2)
    if version != 5 or method not in (0, 2) or (method == 2 and user is None):
        raise OSError("the socks5 egress proxy accepts none of our methods")
    if method == 2:
        name, word = (user or "").encode()[:255], (secret or "").encode()[:255]
        await stream.send_all(b"\x01" + bytes([len(name)]) + name + bytes([len(word)]) + word)
        if (await reply.exactly(2))[1] != 0:
            raise OSError("the socks5 egress proxy refused its credentials")
    await stream.send_all(b"\x05\x01\x00" + _socks_address(host) + port.to_bytes(2, "big"))
    _, status, _, kind = await reply.exactly(4)
    if status != 0:
        raise OSError(f"the socks5 egress proxy could not connect (code {status})")
    size = {1: 4, 4: 16}.get(kind) or (await reply.exactly(1))[0]
    await reply.exactly(size + 2)
    return reply.buffer


def _socks_address(host: str) -> bytes:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        name = host.encode("idna")[:255]
        return b"\x03" + bytes([len(name)]) + name
    return (b"\x01" if address.version == 4 else b"\x04") + address.packed


class _Reader:
    """Reads a proxy's answer off a stream, keeping whatever came after it in `buffer`."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self._stream = stream
        self.buffer = b""

    async def _more(self) -> None:
        chunk = await self._stream.receive_some(4096)
        if not chunk:
            raise OSError("the egress proxy closed the connection")
        self.buffer += chunk
        if len(self.buffer) > _REPLY_LIMIT:
            raise OSError("the egress proxy's answer is too long")

    async def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            await self._more()
        taken, self.buffer = self.buffer[:size], self.buffer[size:]
        return taken

    async def until(self, mark: bytes) -> bytes:
        while mark not in self.buffer:
            await self._more()
        taken, _, self.buffer = self.buffer.partition(mark)
        return taken
