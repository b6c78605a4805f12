"""Domain errors of the scrapers package.

Every error a caller can see from `scrapers` is a `MarketplaceError`; each class builds its own
message from the facts it carries, so callers (and the API's error envelope) never format them.
"""

from __future__ import annotations


class MarketplaceError(Exception):
    """Base class: the marketplace could not be read for the reason the subclass names."""


class UrlRefused(MarketplaceError):
    """A URL that must not be fetched (SSRF guard); nothing was sent anywhere.

    `reason` may be shown to whoever gave the URL, so it never holds an address the host
    resolved to (that would map a private network's names for anyone who asks); the address
    refused, when there is one, is `address`, for the operator's logs only."""

    def __init__(self, url: str, reason: str, *, address: str | None = None) -> None:
        super().__init__(f"URL refused ({reason}): {url[:200]}")
        self.url = url
        self.reason = reason
        self.address = address


class RobotsDisallowed(MarketplaceError):
    """robots.txt of the origin disallows the path for our user agent."""

    def __init__(self, url: str) -> None:
        super().__init__(f"robots.txt disallows {url[:200]}")
        self.url = url


class Blocked(MarketplaceError):
    """The marketplace answered 403 (a block page); the origin is cooled down."""

    def __init__(self, url: str, status: int = 403, cool_down: float = 0.0) -> None:
        super().__init__(f"blocked by the marketplace ({status}) on {url[:200]}")
        self.url = url
        self.status = status
        self.cool_down = cool_down


class RateLimited(MarketplaceError):
    """429 and the retry budget (or the longest acceptable wait) ran out."""

    def __init__(self, origin: str, retry_in: float) -> None:
        super().__init__(f"rate limited by {origin}; retry in {retry_in:.1f}s")
        self.origin = origin
        self.retry_in = retry_in


class ChallengeRequired(MarketplaceError):
    """The site answered with a browser challenge (`cf-mitigated: challenge`, or a challenge
    page where content was expected): it wants a browser session. Not a block: nothing was
    cooled down and the breaker saw a healthy answer."""

    def __init__(self, url: str, status: int) -> None:
        super().__init__(f"the marketplace asks for a browser ({status} challenge) on {url[:200]}")
        self.url = url
        self.status = status


class NoSession(MarketplaceError):
    """No working session for `site`: the site challenges plain clients and neither a browser
    nor an operator could supply one. `reason` is the plain-words line users and operators
    see; nothing about the site's health is implied."""

    def __init__(self, site: str, reason: str) -> None:
        super().__init__(reason)
        self.site = site
        self.reason = reason


class SourcesUnavailable(MarketplaceError):
    """Every source of a listing's state is unavailable on `site` for now (refused for good,
    or challenged with no session): no request was sent. A listing that left the feed then
    counts toward a likely sale by absence."""

    def __init__(self, site: str, detail: str) -> None:
        super().__init__(f"no source can tell listing states on {site}: {detail}")
        self.site = site
        self.detail = detail


class CircuitOpen(MarketplaceError):
    """The origin's circuit breaker is open: no request was sent."""

    def __init__(self, origin: str, retry_in: float) -> None:
        super().__init__(f"circuit open for {origin}; next probe in {retry_in:.1f}s")
        self.origin = origin
        self.retry_in = retry_in


class MarketplaceTimeout(MarketplaceError):
    """One request did not complete within its deadline (after retries)."""

    def __init__(self, url: str, seconds: float) -> None:
        super().__init__(f"no complete answer from {url[:200]} within {seconds:.1f}s")
        self.url = url
        self.seconds = seconds


class MarketplaceUnavailable(MarketplaceError):
    """5xx or transport failures outlasted the retries."""

    def __init__(self, url: str, detail: str) -> None:
        super().__init__(f"marketplace unavailable for {url[:200]}: {detail}")
        self.url = url
        self.detail = detail


class HttpStatusError(MarketplaceError):
    """A status the client does not retry (404, 410, other 4xx, unexpected 3xx). `body` keeps
    the answer's first bytes: a profile tells "this path moved" from "this item is gone"."""

    def __init__(self, url: str, status: int, body: bytes = b"") -> None:
        super().__init__(f"HTTP {status} from {url[:200]}")
        self.url = url
        self.status = status
        self.body = body[:4096]


class EndpointRefused(MarketplaceError):
    """One endpoint refused us (today's item detail API: 403 with code 106). Not a block of
    the origin: nothing was cooled down and the breaker saw a healthy answer."""

    def __init__(self, url: str, status: int) -> None:
        super().__init__(f"endpoint refused ({status}): {url[:200]}")
        self.url = url
        self.status = status


class ProfileMoved(MarketplaceError):
    """The catalogue path of every wire profile tried answers "not found": the marketplace
    moved its API again. Nothing was learnt about any listing."""

    def __init__(self, origin: str, tried: tuple[str, ...]) -> None:
        super().__init__(f"no wire profile reads {origin}'s catalogue (tried {', '.join(tried)})")
        self.origin = origin
        self.tried = tried


class SuspiciousAnswer(MarketplaceError):
    """An answer that parsed but cannot be believed (a block that looks like success):
    `kind` is "filters_ignored" or "suspected_block". Never data."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind.replace('_', ' ')}: {detail}")
        self.kind = kind
        self.detail = detail


class ResponseTooLarge(MarketplaceError):
    """The body exceeded the client's size cap; the rest was not read."""

    def __init__(self, url: str, limit: int) -> None:
        super().__init__(f"response from {url[:200]} exceeds {limit} bytes")
        self.url = url
        self.limit = limit


class ParseError(MarketplaceError):
    """A page or document that cannot be understood at all (single bad items are skipped)."""

    def __init__(self, what: str, detail: str) -> None:
        super().__init__(f"cannot parse {what}: {detail}")
        self.what = what
        self.detail = detail


class InvalidCatalogueUrl(MarketplaceError):
    """A catalogue URL whose filters are not valid (bad id, bad price, unknown order)."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"invalid catalogue URL ({reason}): {url[:200]}")
        self.url = url
        self.reason = reason


class BrowserUnavailable(MarketplaceError):
    """No session could be had from a real browser: none is configured or found, it failed
    to start, or it got no session in time. `cause` is the one line an operator reads."""

    def __init__(self, cause: str) -> None:
        cause = " ".join(cause.split())[:300]  # one line, whatever the browser said
        super().__init__(cause)
        self.cause = cause
