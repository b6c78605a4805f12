"""How one logical request is made, and what it carries of its site's session."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from ._reading import EnoughRead
from ._sessions import MarketSession
from ._ssrf import NormalisedUrl
from ._status_policy import Refusal


@dataclass(frozen=True, slots=True)
class CallPlan:
    """One logical request (the same for every attempt and redirect)."""

    site: NormalisedUrl  # whose session it carries and, if refused, renews
    api: bool = False
    # False: a challenge fails the call instead of seeking a browser session (robots.txt,
    # which is "unavailable" behind one; the warm-up, which is how we learn of one).
    seek_session: bool = True
    plain: bool = False  # sent without the session (the plain warm-up)
    headers: tuple[tuple[str, str], ...] = ()
    refusal: Refusal | None = None
    enough: EnoughRead | None = None


def session_headers(
    session: MarketSession, target: NormalisedUrl, call: CallPlan
) -> dict[str, str]:
    """What a request carries of its site's session: to the site's own origin every cookie
    and the User-Agent they are bound to; to its API origin the token cookie alone; the
    bearer and anon id on API calls wherever they go."""
    headers: dict[str, str] = {}
    if target.origin == call.site.origin:
        headers["Cookie"] = session.cookie_header()
        if session.user_agent:
            headers["User-Agent"] = session.user_agent
    elif session.token:
        headers["Cookie"] = session.cookie_header(token_only=True)
    if call.api and session.token:
        headers["Authorization"] = f"Bearer {session.token}"
        if session.anon_id:
            headers["X-Anon-Id"] = session.anon_id
    return {name: value for name, value in headers.items() if value}


def egress_name(proxy: str | None) -> str:
    """ "direct", or the proxy's scheme, host and port (never its credentials)."""
    if not proxy:
        return "direct"
    parts = urlsplit(proxy)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")
