"""The SSRF guard for URLs that users name (webhooks), not only the marketplace's.

`_ssrf.check_url_syntax` admits marketplace hosts only; a notification webhook may live on any
public host. The rules are otherwise the same, and shared (`_ssrf.split_url`,
`refuse_address_hosts`, `refuse_private_addresses`): no userinfo, no control characters, IP
literals and numeric hosts only as an exactly allowlisted origin, and (when resolved) every
address the host resolves to must be public. The socket side of the guard is
`_pinned.GuardedBackend`.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._ssrf import (
    NormalisedUrl,
    Resolver,
    refuse_address_hosts,
    refuse_private_addresses,
    split_url,
)
from .errors import UrlRefused


def check_public_url_syntax(
    url: str, allowed_origins: Iterable[str] = (), *, https_only: bool = True
) -> tuple[NormalisedUrl, bool]:
    """The static half (no DNS): the normalised URL and whether its origin was allowlisted.

    With `https_only`, plain http is admitted only for an allowlisted origin. Fragments are
    refused (they are never sent, so a URL carrying one is not what the user thinks it is),
    and so are single-label hosts (`localhost`, `intranet`: they resolve through search
    domains). Raises `UrlRefused(url, reason)`.
    """
    if isinstance(url, str) and " " in url:
        raise UrlRefused(url, "control characters or whitespace")
    split = split_url(url, allowed_origins, max_length=2048)
    if split.fragment or url.endswith("#"):
        raise UrlRefused(url, "a #fragment is never sent; remove it")
    if not split.explicit:
        if https_only and split.scheme != "https":
            raise UrlRefused(url, "scheme must be https")
        refuse_address_hosts(url, split.host)
        if "." not in split.host:
            raise UrlRefused(url, "a single-label host name is not a public host")
    return split.normalised(), split.explicit


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
    if not explicit:
        await refuse_private_addresses(url, normalised.host, normalised.port, resolver)
    return normalised
