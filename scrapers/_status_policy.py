"""What one answer's HTTP status does to its site's politeness state and to the request.

Policy (`judge` applies it to the site's `OriginState`; the client's request loop acts on the
verdict):
- 2xx: done; the breaker notes a success, a slowed bucket wins back some pace and the site's
  last success is noted.
- 301, 302, 303, 307, 308: follow it (through the redirect guard); the origin is healthy.
- 401 on an API call whose body names a token error (or is not JSON): re-warm the session and
  try again, once per request; the origin is healthy, our token is not.
- a browser challenge (`_challenge.is_challenge`), whatever its status: `Next.CHALLENGE` (the
  site wants a browser session). Not a block and not a failure: the breaker notes a success
  and no window is set.
- 429: a "rate_limited" block is noted; the whole egress waits `Retry-After` (else a
  full-jitter backoff) before anything else goes out through it (the marketplace's budget is
  per IP address, across sites), its bucket slows down and the request is sent again,
  unless that 429 is one more than `max_retries` or its wait is over `max_retry_wait`:
  `RateLimited`. 429s count as attempts but not as breaker failures.
- 403 that the caller's `refusal` recognises: `EndpointRefused` (one endpoint refused); the
  breaker notes a success and the site's windows are left alone.
- any other 403: a "blocked" block is noted, the breaker counts a failure and the host pauses
  for `block_cool_down` (or the longer `Retry-After`): `Blocked`. The site's other host (its
  API origin, or its `www`) is left alone.
- other 4xx: `HttpStatusError` (the origin is healthy: it answered).
- 5xx: a failure to back off from (`MarketplaceUnavailable`, returned, not raised), and the host
  never comes back sooner than the answer's `Retry-After`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

from ._challenge import is_challenge
from ._origin_state import OriginState
from ._reading import MarketResponse
from ._redirects import REDIRECTS
from ._retry import full_jitter, parse_retry_after
from ._settings import ClientSettings
from ._ssrf import NormalisedUrl
from .errors import (
    Blocked,
    EndpointRefused,
    HttpStatusError,
    MarketplaceUnavailable,
    RateLimited,
)

Refusal = Callable[[int, bytes], bool]
"""`refusal(status, body)`: True when a 403 refuses one endpoint rather than blocking us."""


class Next(Enum):
    """What the request loop does after an answer that neither failed nor settled it."""

    DONE = "done"  # the answer is the result
    REDIRECT = "redirect"  # follow its Location
    REWARM = "rewarm"  # refresh the session, then send again
    CHALLENGE = "challenge"  # the site wants a browser session
    AGAIN = "again"  # send again at once (the site's window paces it)


@dataclass
class Progress:
    """One logical request across its attempts, redirects and re-warm."""

    current: NormalisedUrl
    attempt: int = 0
    redirects: int = 0
    rewarmed: bool = False
    challenged: bool = False  # a browser session was already sought for this request


def judge(
    state: OriginState,
    response: MarketResponse,
    progress: Progress,
    *,
    api: bool,
    refusal: Refusal | None,
    settings: ClientSettings,
    rng: random.Random,
) -> Next | MarketplaceUnavailable:
    """Apply `response` to `state` and `progress` (see the module doc): a `Next`, the 5xx
    failure to back off from, or a raised `MarketplaceError`."""
    s = settings
    current = progress.current
    status = response.status
    if is_challenge(status, response.headers, response.content, json_expected=api):
        state.breaker.record_success()  # it answered: it wants a browser, it is not down
        state.note_challenge()
        return Next.CHALLENGE
    if 200 <= status < 300:
        state.breaker.record_success()
        state.bucket.speed_up()
        state.last_success_at = datetime.now(UTC)
        return Next.DONE
    if status in REDIRECTS:
        state.breaker.record_success()
        return Next.REDIRECT
    if status == 401 and api and not progress.rewarmed and is_token_error(response):
        state.breaker.record_success()  # the origin is healthy, our token is not
        progress.rewarmed = True
        return Next.REWARM
    retry_after = parse_retry_after(response.headers.get("retry-after"))
    if status == 429:
        state.note_block("rate_limited")
        wait = retry_after
        if wait is None:
            wait = full_jitter(progress.attempt, s.backoff_base, s.backoff_cap, rng)
        state.egress.hold_off(wait)
        state.bucket.slow_down()
        progress.attempt += 1
        if progress.attempt > s.max_retries or wait > s.max_retry_wait:
            raise RateLimited(current.origin, wait)
        return Next.AGAIN
    if status == 403 and refusal is not None and refusal(status, response.content):
        state.breaker.record_success()  # the origin answered; one door is shut
        raise EndpointRefused(current.url, status)
    if status == 403:
        state.note_block("blocked")
        state.breaker.record_failure()
        cool_down = max(s.block_cool_down, retry_after or 0.0)
        state.hold_off(cool_down)
        raise Blocked(current.url, status, cool_down)
    if status < 500:
        state.breaker.record_success()
        raise HttpStatusError(current.url, status, response.content)
    if retry_after is not None:  # a 503 may say how long; never come back sooner
        state.hold_off(retry_after)
    return MarketplaceUnavailable(current.url, f"HTTP {status}")


def is_token_error(response: MarketResponse) -> bool:
    try:
        body = json.loads(response.content)
    except ValueError:
        return True  # a bare 401 on an API call still means "warm up again"
    return not isinstance(body, dict) or body.get("message_code") in (
        "invalid_authentication_token",
        None,
    )
