"""What a form's answer shows once after its redirect (Post/Redirect/Get), when a notice code
(`?notice=`, a fixed sentence) cannot say it: a new key's or signing secret's plaintext, a test
message's outcome, the date a trial ends.

Every successful form POST answers 303 See Other to a page (`see_other`), so reloading that
page never sends the form again. What the page must show beyond a fixed notice travels in a
short-lived cookie (`ns_flash`) that only this service can read or write: sealed with a key
derived from the service's secret key (`SecretBox`, encrypted and authenticated), bound to
the browser's session (or pre-session CSRF cookie) and to the one page it is for, expiring
after `LIFETIME_SECONDS`. The page that takes it deletes it in the same answer: a reload
shows the page without it, as the plaintext of a secret must be shown only once.
"""

from __future__ import annotations

import hmac
import time
from typing import Any

from quart import Response, g, request

from api.http.auth import SESSION_COOKIE
from api.services import services
from api.web.csrf import PRE_COOKIE
from engine import BadSecretBox, SecretBox

COOKIE = "ns_flash"
LIFETIME_SECONDS = 120
_PURPOSE = b"nichescope page flash"


def _box() -> SecretBox:
    return SecretBox(services().settings.secret_key, purpose=_PURPOSE)


def _binding() -> str:
    """A digest of the cookie that makes this browser this browser: its session, else its
    pre-session CSRF secret (every form checks one of the two before it acts)."""
    holder = request.cookies.get(SESSION_COOKIE) or request.cookies.get(PRE_COOKIE) or ""
    return services().hasher.digest("flash:" + holder)


def carry(response: Response, path: str, **data: Any) -> Response:
    """`response` (a redirect to the page at `path`) carrying `data` (JSON values) to that
    page's next view, in this browser only."""
    sealed = _box().seal(
        {"path": path, "bind": _binding(), "until": time.time() + LIFETIME_SECONDS, "data": data}
    )
    response.set_cookie(
        COOKIE,
        sealed,
        max_age=LIFETIME_SECONDS,
        path=path,
        secure=services().settings.cookie_secure,
        httponly=True,
        samesite="Lax",
    )
    return response


def take() -> dict[str, Any]:
    """What the redirect to this page carried (empty when nothing, or nothing valid: another
    browser's, another page's, expired or forged); the answer then deletes the cookie."""
    raw = request.cookies.get(COOKIE)
    if not raw or request.method != "GET":
        return {}
    try:
        sealed = _box().open(raw)
    except BadSecretBox:
        return {}
    if sealed.get("path") != request.path:
        return {}  # sent along to a page under its path: not this page's to take
    g.flash_taken = request.path
    data = sealed.get("data")
    fresh = isinstance(sealed.get("until"), int | float) and sealed["until"] >= time.time()
    mine = hmac.compare_digest(str(sealed.get("bind", "")), _binding())
    return data if fresh and mine and isinstance(data, dict) else {}


def forget_taken(response: Response) -> None:
    """`after_request`: delete the cookie this view took, so a reload shows it no more."""
    path: str | None = g.get("flash_taken")
    if path is not None:
        response.delete_cookie(
            COOKIE,
            path=path,
            secure=services().settings.cookie_secure,
            httponly=True,
            samesite="Lax",
        )
