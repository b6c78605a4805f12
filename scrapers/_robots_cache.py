"""robots.txt, read once per origin and kept for `ttl`.

RFC 9309: a 4xx means "unavailable" (allow all), a 5xx "unreachable" (disallow all).
Unreachable (an outage, a timeout): nothing is fetched and the call fails with that true
reason; nothing is remembered either, so the next call asks again (a remembered "disallow all"
kept polls failing for an hour after the marketplace came back). Behind a browser challenge
robots.txt is a 4xx, "unavailable", which allows access: it is read again after
`CHALLENGED_TTL`, with the site's session once there is one, and obeyed then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio

from ._reading import MarketResponse
from ._robots import RobotsRules
from ._ssrf import NormalisedUrl
from .errors import ChallengeRequired, HttpStatusError

CHALLENGED_TTL = 300.0

Fetch = Callable[[NormalisedUrl], Awaitable[MarketResponse]]


@dataclass
class _Entry:
    rules: RobotsRules | None = None
    at: float = 0.0
    ttl: float = 0.0
    lock: trio.Lock = field(default_factory=trio.Lock)


class RobotsCache:
    """Rules per origin actually fetched (see the module doc)."""

    def __init__(self, product: str, ttl: float) -> None:
        self._product = product
        self._ttl = ttl
        self._entries: dict[str, _Entry] = {}

    async def allows(self, target: NormalisedUrl, fetch: Fetch) -> bool:
        """Whether `target` may be fetched; `fetch(robots_url)` reads robots.txt when the
        rules are missing or stale. Its errors other than a status or a challenge propagate."""
        entry = self._entries.setdefault(target.origin, _Entry())
        async with entry.lock:
            if entry.rules is None or trio.current_time() - entry.at > entry.ttl:
                entry.rules, entry.ttl = await self._read(target, fetch)
                entry.at = trio.current_time()
            return entry.rules.can_fetch(target.target)

    async def _read(self, target: NormalisedUrl, fetch: Fetch) -> tuple[RobotsRules, float]:
        robots = NormalisedUrl(
            target.join("/robots.txt"), target.origin, target.scheme, target.host, target.port,
            "/robots.txt",
        )  # fmt: skip
        try:
            response = await fetch(robots)
        except HttpStatusError as err:
            return RobotsRules.for_status(err.status, "", self._product), self._ttl
        except ChallengeRequired as err:
            rules = RobotsRules.for_status(err.status, "", self._product)
            return rules, min(self._ttl, CHALLENGED_TTL)
        return RobotsRules.for_status(response.status, response.text, self._product), self._ttl
