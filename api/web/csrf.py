"""CSRF tokens for page forms, in addition to the session cookie's SameSite=Lax.

Two kinds, both keyed HMACs (`services().hasher`, the service secret), compared in constant
time:

- `session`: bound to the signed-in session (an HMAC of the session cookie's secret), for forms
  a signed-in person submits (sign out, create or revoke a key). It changes at every sign-in.
- `pre`: for forms submitted before there is a session (sign in, sign up, forgot and reset
  password): a signed double-submit cookie. A random `ns_csrf` cookie is set by the first page
  view and the form carries an HMAC of it; a cross-site page can neither read the cookie nor
  compute the HMAC.
"""

from __future__ import annotations

import hmac
from typing import Literal

from quart import Response, g, request

from api.http.auth import SESSION_COOKIE
from api.http.security import new_secret
from api.services import services

PRE_COOKIE = "ns_csrf"
FIELD = "csrf_token"
Kind = Literal["session", "pre"]


class CsrfRefused(Exception):
    """A state-changing form arrived without the right token; answered with a 403 page."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _pre_secret() -> str:
    """This browser's pre-session secret: the cookie, or one minted for this response."""
    minted: str | None = g.get("csrf_new_pre")
    if minted is not None:
        return minted
    cookie = request.cookies.get(PRE_COOKIE, "")
    if 20 <= len(cookie) <= 100:
        return cookie
    g.csrf_new_pre = new_secret()
    return str(g.csrf_new_pre)


def token(kind: Kind) -> str:
    """The token a form of this kind must carry (used by templates as `csrf_token(kind)`)."""
    hasher = services().hasher
    if kind == "session":
        return hasher.digest("csrf-session:" + request.cookies.get(SESSION_COOKIE, ""))
    return hasher.digest("csrf-pre:" + _pre_secret())


async def check(kind: Kind) -> None:
    """Raise `CsrfRefused` unless the submitted form carries this request's token of `kind`."""
    form = await request.form
    submitted = form.get(FIELD, "")
    if kind == "session" and not request.cookies.get(SESSION_COOKIE):
        raise CsrfRefused("Your session has ended.")
    if kind == "pre" and not request.cookies.get(PRE_COOKIE):
        raise CsrfRefused("Your browser did not send back the security cookie of this form.")
    if not submitted or not hmac.compare_digest(submitted, token(kind)):
        raise CsrfRefused("The form's security token is missing or does not match.")


def set_pre_cookie(response: Response) -> None:
    """`after_request`: store the pre-session secret minted during this request, if any."""
    minted: str | None = g.get("csrf_new_pre")
    if minted is None:
        return
    response.set_cookie(
        PRE_COOKIE,
        minted,
        max_age=24 * 3600,
        path="/",
        secure=services().settings.cookie_secure,
        httponly=True,
        samesite="Lax",
    )
