"""SSRF guard: which URLs may be fetched at all.

A URL is fetchable when its scheme is http(s), it carries no userinfo, and its origin is either a
marketplace origin (`https://www.vinted.<tld>` or its API origin `https://api.vinted.<tld>`,
for a fixed list of TLDs) or one of the origins
allowlisted exactly (scheme, host and port). Marketplace hosts must also resolve only to public
addresses; an explicitly allowlisted origin (a simulator on loopback, say) skips that check,
because the operator named it. IP literals are only ever accepted as an exact allowlisted origin,
and numeric hosts in any non-canonical form (decimal, octal, hex, short) are refused outright.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import trio

from ._sites import MARKET_HOSTS, split_origin
from ._sites import MARKET_TLDS as MARKET_TLDS  # re-exported
from .errors import UrlRefused

# Addresses no marketplace host may resolve to, beyond what `ipaddress` flags as non-global.
_METADATA = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)
# Hosts of only digits, dots and hex markers are IPv4 in disguise (2130706433, 0x7f.1, 0177.0.0.1).
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]*))*\.?$")

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""`await resolver(host, port)` -> the addresses the host resolves to, as strings."""


@dataclass(frozen=True, slots=True)
class NormalisedUrl:
    """A URL that passed the guard, split into the parts the client needs."""

    url: str
    origin: str
    scheme: str
    host: str
    port: int
    target: str  # path + query, what goes on the request line

    def join(self, target: str) -> str:
        return self.origin + (target if target.startswith("/") else "/" + target)


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve through `trio.socket.getaddrinfo` (a worker thread); cancellable like any wait."""
    infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def normalise_origin(origin: str) -> str:
    """`scheme://host:port` with the default port made explicit; `ValueError` when not an origin."""
    parts = split_origin(origin)
    assert parts.hostname  # split_origin refuses an origin without one
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{_host_for_origin(parts.hostname.lower())}:{port}"


def _host_for_origin(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def refuse_non_global(url: str, address: str) -> None:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError as err:
        raise UrlRefused(url, "resolves to an unparseable address", address=address) from err
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in _METADATA:
        raise UrlRefused(url, "resolves to a cloud metadata address", address=str(ip))
    if (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    ):
        raise UrlRefused(url, "resolves to a non-public address", address=str(ip))


@dataclass(frozen=True, slots=True)
class SplitUrl:
    """A URL past the checks every fetch makes, whatever its host: see `split_url`."""

    url: str
    scheme: str
    host: str
    port: int
    path: str
    query: str
    fragment: str
    origin: str  # scheme://host:port, the default port explicit
    explicit: bool  # the origin was allowlisted exactly

    def normalised(self) -> NormalisedUrl:
        target = urlunsplit(("", "", self.path or "/", self.query, ""))
        public_origin = self.origin
        if (self.scheme, self.port) in (("http", 80), ("https", 443)):
            public_origin = f"{self.scheme}://{_host_for_origin(self.host)}"
        return NormalisedUrl(
            url=public_origin + target,
            origin=public_origin,
            scheme=self.scheme,
            host=self.host,
            port=self.port,
            target=target,
        )


def split_url(url: str, allowed_origins: Iterable[str] = (), *, max_length: int = 4096) -> SplitUrl:
    """What every fetch checks (no DNS): a string of sensible length without control
    characters, http(s), no userinfo, a host. Raises `UrlRefused`."""
    if not isinstance(url, str) or len(url) > max_length:
        raise UrlRefused(str(url)[:200], "not a URL string of sensible length")
    if any(ch in url for ch in "\r\n\t\x00") or url != url.strip():
        raise UrlRefused(url, "control characters or surrounding whitespace")
    try:
        parts = urlsplit(url)
        port_value = parts.port
    except ValueError as err:
        raise UrlRefused(url, f"malformed URL ({err})") from err
    if parts.scheme not in ("http", "https"):
        raise UrlRefused(url, "scheme must be http or https")
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise UrlRefused(url, "userinfo is not allowed")
    host = (parts.hostname or "").lower().rstrip(".")
    if not host:
        raise UrlRefused(url, "no host")
    port = port_value or (443 if parts.scheme == "https" else 80)
    origin = f"{parts.scheme}://{_host_for_origin(host)}:{port}"
    explicit = origin in {normalise_origin(o) for o in allowed_origins}
    return SplitUrl(
        url, parts.scheme, host, port, parts.path, parts.query, parts.fragment, origin, explicit
    )


def refuse_address_hosts(url: str, host: str) -> None:
    """IP literals and numbers in disguise (2130706433, 0x7f.1, 0177.0.0.1) are refused: only
    an exactly allowlisted origin may name an address."""
    try:
        ipaddress.ip_address(host)
        literal = True
    except ValueError:
        literal = ":" in host
    if literal:
        raise UrlRefused(url, "IP address hosts are only allowed as an allowlisted origin")
    if _NUMERIC_HOST.match(host):
        raise UrlRefused(url, "numeric host in a non-canonical form")


async def refuse_private_addresses(
    url: str, host: str, port: int, resolver: Resolver | None
) -> None:
    """Every address `host` resolves to must be public; one that does not resolve is refused
    too (it cannot be checked). Cancellation during resolution propagates unchanged."""
    try:
        addresses = await (resolver or system_resolver)(host, port)
    except OSError as err:
        raise UrlRefused(url, f"host does not resolve ({err})") from err
    if not addresses:
        raise UrlRefused(url, "host resolves to no address")
    for address in addresses:
        refuse_non_global(url, address)


def check_url_syntax(url: str, allowed_origins: Iterable[str] = ()) -> tuple[NormalisedUrl, bool]:
    """The static half of the guard (no DNS): the normalised URL and whether its origin was
    allowlisted explicitly. Raises `UrlRefused`."""
    split = split_url(url, allowed_origins)
    if not split.explicit:
        refuse_address_hosts(url, split.host)
        if split.host not in MARKET_HOSTS:
            raise UrlRefused(
                url, f"host {split.host!r} is not a marketplace host or allowlisted origin"
            )
        if split.scheme != "https" or split.port != 443:
            raise UrlRefused(url, "marketplace hosts are fetched over https on port 443 only")
    return split.normalised(), split.explicit


async def check_catalogue_url(
    url: str,
    allowed_origins: Iterable[str] = (),
    *,
    resolver: Resolver | None = None,
) -> NormalisedUrl:
    """Validate `url` for fetching; raises `UrlRefused(reason)` and sends nothing if it must not.

    Resolution errors are refusals too (an unresolvable host cannot be checked). Cancellation
    during resolution propagates unchanged.
    """
    normalised, explicit = check_url_syntax(url, allowed_origins)
    if not explicit:
        await refuse_private_addresses(url, normalised.host, normalised.port, resolver)
    return normalised
