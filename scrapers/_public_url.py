"""The SSRF guard for URLs that users name (webhooks), not only the marketplace's.

`_ssrf.check_url_syntax` admits marketplace hosts only; a notification webhook may live on any
public host. The rules are otherwise the same: no userinfo, no control characters, IP literals
and numeric hosts only as an exactly allowlisted origin, and (when resolved) every address the
host resolves to must be public. The socket side of the guard is `_pinned.GuardedBackend`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

from ._ssrf import (
    _NUMERIC_HOST,
    NormalisedUrl,
    Resolver,
    _host_for_origin,
    normalise_origin,
    refuse_non_global,
    system_resolver,
)
from .errors import UrlRefused


def check_public_url_syntax(
    url: str, allowed_origins: Iterable[str] = (), *, https_only: bool = True
) -> tuple[NormalisedUrl, bool]:
    """The static half (no DNS): the normalised URL and whether its origin was allowlisted.

    With `https_only`, plain http is admitted only for an allowlisted origin. Fragments are
    refused (they are never sent, so a URL carrying one is not what the user thinks it is).
    Raises `UrlRefused(url, reason)`.
    """
    if not isinstance(url, str) or len(url) > 2048:
        raise UrlRefused(str(url)[:200], "not a URL string of sensible length")
    if any(ch in url for ch in "\r\n\t\x00 ") or url != url.strip():
        raise UrlRefused(url, "control characters or whitespace")
    try:
        parts = urlsplit(url)
        port_value = parts.port
    except ValueError as err:
        raise UrlRefused(url, f"malformed URL ({err})") from err
    if parts.scheme not in ("http", "https"):
        raise UrlRefused(url, "scheme must be https")
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise UrlRefused(url, "userinfo (user:password@) is not allowed")
    if parts.fragment or url.endswith("#"):
        raise UrlRefused(url, "a #fragment is never sent; remove it")
    host = (parts.hostname or "").lower().rstrip(".")
    if not host:
        raise UrlRefused(url, "no host")
    port = port_value or (443 if parts.scheme == "https" else 80)
    origin = f"{parts.scheme}://{_host_for_origin(host)}:{port}"
    explicit = origin in {normalise_origin(o) for o in allowed_origins}
    if not explicit:
        if https_only and parts.scheme != "https":
            raise UrlRefused(url, "scheme must be https")
        try:
            ipaddress.ip_address(host)
            literal = True
        except ValueError:
            literal = ":" in host
        if literal:
            raise UrlRefused(url, "IP address hosts are not allowed; use a host name")
        if _NUMERIC_HOST.match(host):
            raise UrlRefused(url, "numeric host in a non-canonical form")
        if "." not in host:
            # Single-label names (localhost, intranet) resolve through search domains.
            raise UrlRefused(url, "a single-label host name is not a public host")
    target = urlunsplit(("", "", parts.path or "/", parts.query, ""))
    public_origin = origin
    if (parts.scheme, port) in (("http", 80), ("https", 443)):
        public_origin = f"{parts.scheme}://{_host_for_origin(host)}"
    normalised = NormalisedUrl(
        url=public_origin + target,
        origin=public_origin,
        scheme=parts.scheme,
        host=host,
        port=port,
        target=target,
    )
    return normalised, explicit


async def check_public_url(
    url: str,
    allowed_origins: Iterable[str] = (),
    *,
    https_only: bool = True,
    resolver: Resolver | None = None,
) -> NormalisedUrl:
    """`check_public_url_syntax`, then every address the host resolves to must be public
    (an allowlisted origin skips the look-up: the operator named it).

    Raises `UrlRefused`; a host that does not resolve is refused too. Cancellation during
    the look-up propagates unchanged.
    """
    normalised, explicit = check_public_url_syntax(url, allowed_origins, https_only=https_only)
    if explicit:
        return normalised
    try:
        addresses = await (resolver or system_resolver)(normalised.host, normalised.port)
    except OSError as err:
        raise UrlRefused(url, f"host does not resolve ({err})") from err
    if not addresses:
        raise UrlRefused(url, "host resolves to no address")
    for address in addresses:
        refuse_non_global(url, address)
    return normalised
