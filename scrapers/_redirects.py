"""Redirects, followed by hand (the client's own following is off) and only within an origin.

Policy: every hop passes the SSRF guard again (`check`, the client's `check_url`) and may not
leave the origin it came from. A redirect without `Location`, or one past `max_redirects`,
fails as `HttpStatusError` with the redirect's status; a target the guard refuses fails as
`UrlRefused` ("redirect refused: <reason>"), and so does one on another origin ("redirect
leaves the origin").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urljoin

from ._reading import MarketResponse
from ._ssrf import NormalisedUrl
from .errors import HttpStatusError, UrlRefused

REDIRECTS = frozenset({301, 302, 303, 307, 308})
UrlCheck = Callable[[str], Awaitable[NormalisedUrl]]
"""`check(url)`: the SSRF guard; the normalised URL, or `UrlRefused`."""


async def redirect_target(
    current: NormalisedUrl,
    response: MarketResponse,
    redirects: int,
    *,
    max_redirects: int,
    check: UrlCheck,
) -> NormalisedUrl:
    """Where the redirect `response` to `current` leads, `redirects` hops in (module doc)."""
    location = response.headers.get("location")
    if not location or redirects >= max_redirects:
        raise HttpStatusError(current.url, response.status)
    next_url = urljoin(current.url, location)
    try:
        nxt = await check(next_url)
    except UrlRefused as err:
        raise UrlRefused(next_url, f"redirect refused: {err.reason}") from err
    if nxt.origin != current.origin:
        raise UrlRefused(next_url, "redirect leaves the origin")
    return nxt
