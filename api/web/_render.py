"""Helpers every page uses: who is signed in, rendering a template, form errors in words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from pydantic import ValidationError
from quart import Response, g, redirect, render_template, request

from api.email_links import proven_address
from api.http.auth import Principal, session_principal
from api.http.security import MIN_PASSWORD_LENGTH
from api.services import services
from api.web import csrf, flash

# Messages named by a short code in the query string after a redirect (never free text, so a
# link cannot make the page say something we did not write).
NOTICES = {
    "registered": "If that e-mail was free, your account is ready. Sign in to continue, "
    "and confirm your address with the link we mailed to it.",
    "confirm-sent": "A new confirmation link is on its way to your e-mail address.",
    "confirm-wait": "Several links were mailed already. Wait a few minutes, then ask again.",
    "confirm-failed": "The e-mail could not be sent just now. Try again in a minute.",
    "signed-out": "You are signed out.",
    "password-changed": "Your password was changed. Sign in with the new one.",
    "revoked": "The key was revoked. Programs that used it can no longer sign in with it.",
    "signin-needed": "Sign in to see that page.",
}


async def person() -> Principal | None:
    """The signed-in person of this page view (session cookie only; tokens are for agents)."""
    if "person" not in g:
        g.person = await session_principal()
    found: Principal | None = g.person
    return found


def oidc_enabled() -> bool:
    settings = services().settings
    return bool(settings.oidc_issuer and settings.oidc_client_id)


async def page(
    template: str,
    *,
    status: int = 200,
    notices: Mapping[str, str] = NOTICES,
    **context: Any,
) -> Response:
    """Render `template` with what every page needs: the person, CSRF tokens, a notice (the
    `notice` given, else the one of `notices`, or of the shared `NOTICES`, that `?notice=`
    names), and what the form that redirected here carried for it (`flash.take`; what the
    view gives wins)."""
    who = await person()
    for key, value in flash.take().items():
        context.setdefault(key, value)
    code = request.args.get("notice", "")
    notice = notices.get(code) or NOTICES.get(code)  # the page's own words, else the shared
    body = await render_template(
        template,
        person=who,
        # Read each time from the store: the banner goes as soon as the address is proven.
        unconfirmed_email=who is not None
        and await proven_address(services().store, who.user_id) is None,
        notice=context.pop("notice", notice),
        oidc_enabled=oidc_enabled(),
        csrf_field=csrf.FIELD,
        csrf_session=csrf.token("session") if who else "",
        csrf_pre=csrf.token("pre"),
        **context,
    )
    return Response(body, status=status, content_type="text/html; charset=utf-8")


async def confirm_delete(path: str, *, title: str, message: str, button: str) -> Response:
    """The page asking to confirm deleting the resource whose page is `path`: its form posts
    to `{path}/delete`, and "Keep it" leads back to `path`."""
    return await page(
        "confirm.html",
        title=title,
        message=message,
        action=f"{path}/delete",
        button=button,
        back=path,
    )


def see_other(location: str) -> Response:
    """A 303 redirect (after a POST the browser follows it with GET)."""
    response = redirect(location, code=303)
    return response  # type: ignore[return-value]


def requested_page() -> int:
    """The `?page=` a list page was asked for; 1 for anything that is not a page number
    (`"²".isdigit()` holds and `int("²")` raises: only ASCII digits count)."""
    number = request.args.get("page", "1")
    return max(1, int(number)) if number.isascii() and number.isdigit() else 1


def safe_next(value: str | None, default: str = "/dashboard") -> str:
    """A path of this site to go to after sign-in, as a browser would resolve it; anything
    else is `default`.

    Browsers drop tabs and newlines from a URL and read a backslash as a slash, so
    "/<TAB>/host" and "/\\host" are "//host", another origin. So a control character or
    whitespace anywhere refuses the value (our own paths have none, and in a Location header
    they would break the answer), and what is left must be a path with no scheme and no host
    once backslashes are read as slashes."""
    if not value or len(value) > 2048 or not value.startswith("/"):
        return default
    if any(ch.isspace() or ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in value):
        return default
    as_browser = value.replace("\\", "/")
    parts = urlsplit(as_browser)
    if as_browser.startswith("//") or parts.scheme or parts.netloc:
        return default
    return quote(value, safe="/?&=#%:@!$'()*+,;~-._")


_MESSAGES = {
    "email": "Enter an e-mail address such as name@example.com.",
    "password": f"Use at least {MIN_PASSWORD_LENGTH} characters.",
    "label": "Give the key a name of 1 to 100 characters, such as “laptop script”.",
    "scopes": "Pick at least one permission.",
    "name": "Keep the name under 200 characters.",
    "token": "This reset link is incomplete. Open the link from the e-mail again.",
}


def field_errors(err: ValidationError) -> dict[str, str]:
    """One sentence per invalid form field, keyed by field name."""
    errors: dict[str, str] = {}
    for problem in err.errors(include_url=False):
        field = str(problem["loc"][0]) if problem["loc"] else "form"
        if problem["type"] == "missing":
            errors.setdefault(field, "This field is required.")
        else:
            errors.setdefault(field, _MESSAGES.get(field, "This value is not valid."))
    return errors
