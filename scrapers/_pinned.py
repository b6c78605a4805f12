"""Sockets only to addresses the SSRF guard accepts, checked when the connection opens.

The guard (`_ssrf.check_catalogue_url`) checks the addresses a marketplace host resolves to
before a request is sent, but httpx would then resolve the name again to connect, and an
answer that changed in between (DNS rebinding) could point the socket at a private address.
`GuardedBackend` closes that window: it resolves the host itself, through the client's
resolver (and its cache, so normally the very answer the guard checked), refuses every
address the guard refuses, and connects to a checked address by number. TLS is unchanged:
httpcore still verifies the certificate against the host name, which it also sends as SNI.
Origins the operator allowlisted explicitly are connected by name, as the guard lets them
through unchecked.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

import httpcore
import httpx

from ._ssrf import Resolver, refuse_non_global
from .errors import UrlRefused

AddressCheck = Callable[[str, str], None]
"""`check(url, address)`: raises `UrlRefused` when `address` must not be connected to."""


def _host_port(origin: str) -> tuple[str, int]:
    parts = urlsplit(origin)
    assert parts.hostname is not None and parts.port is not None  # a normalised origin
    return parts.hostname, parts.port


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend (see the module doc); `check` is the guard's address rule,
    replaceable so that tests can pin to a loopback server."""

    def __init__(
        self,
        resolve: Resolver,
        explicit_origins: Iterable[str] = (),
        *,
        check: AddressCheck = refuse_non_global,
        inner: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self._resolve = resolve
        self._explicit = frozenset(_host_port(origin) for origin in explicit_origins)
        self._check = check
        self._inner = inner or httpcore.TrioBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109  (httpcore's interface)
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if (host.lower(), port) in self._explicit:
            return await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        where = f"//{host}:{port}"
        try:
            addresses = await self._resolve(host, port)
        except OSError as err:
            raise UrlRefused(where, f"host does not resolve ({err})") from err
        if not addresses:
            raise UrlRefused(where, "host resolves to no address")
        for address in addresses:
            self._check(where, address)
        failure: httpcore.ConnectError | None = None
        for address in addresses:  # each in turn, as connecting by name would
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as err:
                failure = err
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109  (httpcore's interface)
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("the marketplace client never uses Unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport, its connection pool opening sockets through `backend`."""

    def __init__(self, backend: GuardedBackend, limits: httpx.Limits) -> None:
        # One TLS context for both pools below: building one loads the CA bundle (~20 ms).
        ssl_context = httpx.create_ssl_context(trust_env=False)
        super().__init__(verify=ssl_context, limits=limits, trust_env=False)
        # httpx offers no way to name the network backend, so its pool is rebuilt with ours,
        # with the settings httpx gave it (the rest are httpcore's defaults either way).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=backend,
        )
