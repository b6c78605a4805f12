"""A session an operator pasted: checked before anything is stored.

For deployments without a browser, an operator copies the site's cookies from a browser of
their own (`access_token_web=...; cf_clearance=...`) and, when clearance cookies are among
them, that browser's User-Agent. Everything is checked before it is used: the site must be a
marketplace site (or an allowlisted origin) given by its own origin, not its API origin; the
cookies must parse; the token must be a JWT that has not expired.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._sessions import MarketSession, SessionRefused, parse_cookie_text, session_from_cookies
from ._sites import API_HOSTS
from ._ssrf import check_url_syntax, normalise_origin
from .errors import UrlRefused

MAX_USER_AGENT = 512


def site_origin(site: str, allowed_origins: Iterable[str] = ()) -> str:
    """The site's origin from what an operator typed: `www.vinted.fr`, `https://www.vinted.fr`
    or an allowlisted origin (its host and port alone will do). `SessionRefused` otherwise."""
    try:
        allowed = tuple(normalise_origin(o) for o in allowed_origins)
    except ValueError as err:
        raise SessionRefused(f"an allowlisted origin is not one: {err}") from err
    text = site.strip().rstrip("/")
    if "://" not in text:
        by_host = [o for o in allowed if o.split("://", 1)[1] == text]
        text = by_host[0] if by_host else f"https://{text}"
    try:
        checked, _ = check_url_syntax(text + "/", allowed)
    except UrlRefused as err:
        raise SessionRefused(f"not a marketplace site: {err.reason}") from err
    if checked.target != "/" or checked.host in API_HOSTS:
        raise SessionRefused("give the site's own origin, e.g. www.vinted.fr (not its API)")
    return checked.origin


def operator_session(
    site: str,
    cookie_text: str,
    user_agent: str | None = None,
    *,
    allowed_origins: Iterable[str] = (),
) -> MarketSession:
    """The checked session (see the module doc); `SessionRefused` naming the reason."""
    origin = site_origin(site, allowed_origins)
    agent = (user_agent or "").strip() or None
    if agent is not None and (
        len(agent) > MAX_USER_AGENT or not all(0x20 <= ord(c) <= 0x7E for c in agent)
    ):
        raise SessionRefused("the User-Agent is not one line of printable ASCII")
    return session_from_cookies(
        origin, parse_cookie_text(cookie_text), source="operator", user_agent=agent
    )
