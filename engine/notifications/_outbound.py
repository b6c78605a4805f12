"""The one HTTP client for user-given destinations (webhooks, Discord, Telegram's Bot API).

Sockets open only to addresses the SSRF guard accepts, checked when each connection opens
(scrapers' `GuardedBackend`: a host that resolved to a public address when the channel was
made and to a private one now is refused, DNS rebinding included). Redirects are never
followed: a destination that redirects has failed, and says so. No proxy from the
environment. Origins the operator allowlisted (`NICHESCOPE_OUTBOUND_ALLOW`) and the Telegram
API base the operator configured are connected as named, since the operator named them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import httpx
import trio

from scrapers import GuardedBackend, GuardedTransport, Resolver, normalise_origin, system_resolver

DEFAULT_TELEGRAM_API = "https://api.telegram.org"
TIMEOUT_SECONDS = 10.0
USER_AGENT = "Nichescope-Notifications/1.0"


def _origin_of(base: str) -> str:
    parts = urlsplit(base)
    return normalise_origin(f"{parts.scheme}://{parts.netloc}")


def outbound_client(
    allow: Iterable[str] = (),
    *,
    telegram_api_base: str = DEFAULT_TELEGRAM_API,
    resolver: Resolver | None = None,
    request_timeout: float = TIMEOUT_SECONDS,
    max_connections: int = 32,
) -> httpx.AsyncClient:
    """A guarded `httpx.AsyncClient` (see the module doc); the caller closes it (or use
    `open_outbound`). Raises `ValueError` for an allowlist entry that is not an origin."""
    explicit = {normalise_origin(origin) for origin in allow}
    explicit.add(_origin_of(telegram_api_base))
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=8)
    backend = GuardedBackend(resolver or system_resolver, sorted(explicit))
    return httpx.AsyncClient(
        transport=GuardedTransport(backend, limits),
        follow_redirects=False,  # a redirect could lead anywhere; it is a failed delivery
        timeout=httpx.Timeout(request_timeout),
        headers={"User-Agent": USER_AGENT},
        trust_env=False,  # no proxy from the environment may reroute guarded requests
    )


@asynccontextmanager
async def open_outbound(
    allow: Iterable[str] = (),
    *,
    telegram_api_base: str = DEFAULT_TELEGRAM_API,
    resolver: Resolver | None = None,
    request_timeout: float = TIMEOUT_SECONDS,
) -> AsyncIterator[httpx.AsyncClient]:
    """`outbound_client` for the duration of the block; its sockets are closed on the way out,
    even when cancelled (shielded: closing does not wait on the network)."""
    client = outbound_client(
        allow,
        telegram_api_base=telegram_api_base,
        resolver=resolver,
        request_timeout=request_timeout,
    )
    try:
        yield client
    finally:
        with trio.CancelScope(shield=True):
            await client.aclose()
