"""Helpers every page uses: who is signed in, rendering a template, form errors in words."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from quart import Response, g, redirect, render_template, request

from ..auth import Principal, session_principal
from ..security import MIN_PASSWORD_LENGTH
from ..services import services
from . import csrf

# Messages named by a short code in the query string after a redirect (never free text, so a
# link cannot make the page say something we did not write).
NOTICES = {
    "registered": "If that e-mail was free, your account is ready. Sign in to continue.",
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


async def page(template: str, *, status: int = 200, **context: Any) -> Response:
    """Render `template` with what every page needs: the person, CSRF tokens, a notice."""
    who = await person()
    notice = NOTICES.get(request.args.get("notice", ""))
    body = await render_template(
        template,
        person=who,
        notice=context.pop("notice", notice),
        oidc_enabled=oidc_enabled(),
        csrf_field=csrf.FIELD,
        csrf_session=csrf.token("session") if who else "",
        csrf_pre=csrf.token("pre"),
        **context,
    )
    return Response(body, status=status, content_type="text/html; charset=utf-8")


def see_other(location: str) -> Response:
    """A 303 redirect (after a POST the browser follows it with GET)."""
    response = redirect(location, code=303)
    return response  # type: ignore[return-value]


def safe_next(value: str | None, default: str = "/dashboard") -> str:
    """A local path to go to after sign-in; anything that could leave the site is ignored."""
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")):
        return default
    return value


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
