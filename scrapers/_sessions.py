"""A marketplace site's session: the cookies it handed out, the User-Agent they are bound to,
where they came from and when the token expires.

Since September 2026 the site's `www` origin may hand its session only to a real browser
(MARKETPLACE.md, "Since 13 September 2026"). A session therefore comes from one of three
sources: the plain warm-up (`GET /`), a real browser (`_browser`), or an operator who pasted
one. Whatever its source, the client carries it the same way: every cookie and the bound
User-Agent to the site's `www` origin, the `access_token_web` cookie (and the bearer) to its
API origin.

`access_token_web` is a JWT (`iss: vinted-iam-oauth`): its `exp` says when to renew. The
signature is the marketplace's business, not ours: the claims are read, never trusted for
anything but the renewal time.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

TOKEN_COOKIE = "access_token_web"
ANON_COOKIE = "anon_id"
SessionSourceName = Literal["warmup", "browser", "operator"]

# Renew this long before `exp` (or a quarter of the token's life, when that is shorter): a
# request must never leave with a token that expires on the way.
RENEW_AHEAD_SECONDS = 300.0
# What one pasted or browser-made session may carry (cookie jars of real sites are small).
MAX_COOKIES = 40
MAX_COOKIE_BYTES = 8192


class SessionRefused(ValueError):
    """A session that cannot be used (pasted by an operator or handed over by a browser):
    `reason` says why in words an operator can act on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class MarketSession:
    """One site's session. `cookies` go to the site's `www` origin as they are; the token
    cookie alone (and the bearer header) to its API origin. `user_agent` is the one the
    clearance cookies are bound to (None: the client's own). Times are Unix seconds."""

    site: str
    cookies: tuple[tuple[str, str], ...]
    source: SessionSourceName
    obtained_at: float
    expires_at: float | None = None
    user_agent: str | None = None

    @property
    def token(self) -> str | None:
        return self.cookie(TOKEN_COOKIE)

    @property
    def anon_id(self) -> str | None:
        return self.cookie(ANON_COOKIE)

    def cookie(self, name: str) -> str | None:
        return next((value for key, value in self.cookies if key == name), None)

    def cookie_header(self, *, token_only: bool = False) -> str:
        cookies = [(TOKEN_COOKIE, self.token or "")] if token_only else self.cookies
        return "; ".join(f"{name}={value}" for name, value in cookies if value)

    def renew_at(self) -> float | None:
        """When to renew (Unix seconds): ahead of `exp`; None when the token states none."""
        if self.expires_at is None:
            return None
        life = max(0.0, self.expires_at - self.obtained_at)
        return self.expires_at - min(RENEW_AHEAD_SECONDS, life / 4)

    def due(self, now: float | None = None) -> bool:
        """Whether the session should be renewed before the next request."""
        renew = self.renew_at()
        return renew is not None and (time.time() if now is None else now) >= renew

    def expired(self, now: float | None = None) -> bool:
        return (
            self.expires_at is not None and (time.time() if now is None else now) >= self.expires_at
        )

    def to_json(self) -> dict[str, object]:
        """The sealed form's content (the store seals it; it is never shown back)."""
        return {
            "site": self.site,
            "cookies": [list(c) for c in self.cookies],
            "source": self.source,
            "obtained_at": self.obtained_at,
            "expires_at": self.expires_at,
            "user_agent": self.user_agent,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> MarketSession:
        """The session `to_json` wrote; `SessionRefused` for anything else."""
        try:
            cookies = tuple((str(n), str(v)) for n, v in data["cookies"])  # type: ignore[attr-defined]
            source = str(data["source"])
            if source not in ("warmup", "browser", "operator"):
                raise SessionRefused(f"unknown session source {source!r}")
            expires = data.get("expires_at")
            agent = data.get("user_agent")
            return cls(
                site=str(data["site"]),
                cookies=cookies,
                source=source,  # type: ignore[arg-type]
                obtained_at=float(data["obtained_at"]),  # type: ignore[arg-type]
                expires_at=None if expires is None else float(expires),  # type: ignore[arg-type]
                user_agent=None if agent is None else str(agent),
            )
        except (KeyError, TypeError, ValueError) as err:
            if isinstance(err, SessionRefused):
                raise
            raise SessionRefused(f"not a stored session: {err}") from err


def jwt_claims(token: str) -> dict[str, object]:
    """The claims of a JWT, unverified; `SessionRefused` when `token` is not a JWT."""
    parts = token.split(".")
    if len(parts) != 3 or not parts[1]:
        raise SessionRefused("access_token_web is not a JWT (three dot-separated parts)")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error) as err:
        raise SessionRefused("access_token_web is not a JWT (its claims do not decode)") from err
    if not isinstance(claims, dict):
        raise SessionRefused("access_token_web is not a JWT (its claims are not an object)")
    return claims


def jwt_expiry(token: str) -> float | None:
    """The token's `exp` (Unix seconds), None when it is not a JWT or states none."""
    try:
        exp = jwt_claims(token).get("exp")
    except SessionRefused:
        return None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


def parse_cookie_text(text: str) -> tuple[tuple[str, str], ...]:
    """`name=value; name=value` (what a browser's developer tools copy) as pairs, names
    checked; `SessionRefused` naming what is wrong."""
    if len(text) > MAX_COOKIE_BYTES:
        raise SessionRefused(f"the cookie text is longer than {MAX_COOKIE_BYTES} bytes")
    pairs: list[tuple[str, str]] = []
    for part in text.split(";"):
        name, sep, value = part.strip().partition("=")
        if not part.strip():
            continue
        if not sep or not name or not _token_chars(name) or not _value_chars(value):
            raise SessionRefused(f"not a cookie: {part.strip()[:40]!r}")
        pairs.append((name, value))
    if len(pairs) > MAX_COOKIES:
        raise SessionRefused(f"more than {MAX_COOKIES} cookies")
    return tuple(pairs)


def session_from_cookies(
    site: str,
    cookies: Iterable[tuple[str, str]],
    *,
    source: SessionSourceName,
    user_agent: str | None = None,
    now: float | None = None,
    require_jwt: bool = True,
) -> MarketSession:
    """A session from a cookie jar. `SessionRefused` when it has no `access_token_web`, or
    (`require_jwt`) when the token is not a JWT or has already expired."""
    jar = tuple(dict(cookies).items())
    now = time.time() if now is None else now
    token = dict(jar).get(TOKEN_COOKIE)
    if not token:
        raise SessionRefused(f"no {TOKEN_COOKIE} cookie")
    expires: float | None
    if require_jwt:
        claims = jwt_claims(token)
        exp = claims.get("exp")
        if not isinstance(exp, int | float) or isinstance(exp, bool):
            raise SessionRefused(f"{TOKEN_COOKIE} states no expiry (exp)")
        expires = float(exp)
        if expires <= now:
            raise SessionRefused(f"{TOKEN_COOKIE} expired at {_iso(expires)}")
    else:
        expires = jwt_expiry(token)
    return MarketSession(site, jar, source, now, expires, user_agent)


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


_TOKEN_CHARS = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)


def _token_chars(name: str) -> bool:
    return all(c in _TOKEN_CHARS for c in name)


def _value_chars(value: str) -> bool:
    # RFC 6265 cookie-octets (quotes tolerated): no controls, spaces, commas, semicolons or
    # backslashes, so a value can never smuggle a header.
    return all(0x21 <= ord(c) <= 0x7E and c not in ",;\\" for c in value)
