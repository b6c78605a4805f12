"""`/auth/oidc/start` and `/auth/oidc/callback`: sign in with the configured identity provider.

An identity is linked by e-mail only when the provider says it verified it (`email_verified`
true), and only to an account whose owner proved that address too. With no account for that
e-mail, one is created, proven (without a password: its owner can set one through "forgot
password"). An account whose address nobody proved (anyone may register any address) is taken
over by the identity instead: its password, sessions, access tokens and pending links end and
its alert channels are turned off (`store/accounts/confirmations.claim_for_identity`), so whoever
registered the address first keeps no way in. Both routes answer 404 when OIDC is not
configured.
"""

from __future__ import annotations

import logging

from quart import Response, current_app, request

from api.accounts import actions as identity
from api.services import services
from api.web._blueprint import blueprint
from api.web._render import oidc_enabled, page, safe_next, see_other
from api.web.oidc import OidcClient, OidcConfig, OidcError, PendingSignIn
from store import AlreadyExists, NewUser, UserRecord

log = logging.getLogger(__name__)

PENDING_COOKIE = "ns_oidc"
COOKIE_PATH = "/auth/oidc"
EXTENSION = "nichescope.oidc"


def _client() -> OidcClient:
    """This app's client (created on first use so its caches live as long as the app)."""
    client: OidcClient | None = current_app.extensions.get(EXTENSION)
    if client is None:
        settings = services().settings
        client = OidcClient(
            OidcConfig(
                issuer=settings.oidc_issuer,
                client_id=settings.oidc_client_id,
                client_secret=settings.oidc_client_secret,
                redirect_uri=f"{settings.public_url}/auth/oidc/callback",
            )
        )
        current_app.extensions[EXTENSION] = client
    return client


async def _failed(err: OidcError) -> Response:
    log.warning("OIDC sign-in failed: %s", err)
    response = await page(
        "error.html", status=400, title="Sign-in did not work", reason=err.message
    )
    response.delete_cookie(PENDING_COOKIE, path=COOKIE_PATH)
    return response


async def _account_for(email: str, name: str | None) -> UserRecord:
    """The account the verified `email` opens (see the module's docstring)."""
    svc = services()
    new = NewUser(email=identity.normalise_email(email), name=name, password_hash=None)
    try:
        claim = await svc.store.confirmations.claim_for_identity(new)
    except AlreadyExists:  # created by a concurrent sign-in between our read and write
        claim = await svc.store.confirmations.claim_for_identity(new)
    if claim.taken_over:
        svc.sessions.drop(*claim.ended)
        log.warning("OIDC sign-in took over unconfirmed account %s", claim.user.id)
    return claim.user


@blueprint.get("/auth/oidc/start")
async def oidc_start() -> Response:
    if not oidc_enabled():
        return await page("error.html", status=404, title="Page not found", reason="")
    pending = PendingSignIn.new(safe_next(request.args.get("next")))
    try:
        location = await _client().authorization_url(pending)
    except OidcError as err:
        return await _failed(err)
    response = see_other(location)
    response.set_cookie(
        PENDING_COOKIE,
        pending.seal(services().hasher),
        max_age=600,
        path=COOKIE_PATH,
        secure=services().settings.cookie_secure,
        httponly=True,
        # Lax: the provider sends the browser back with a top-level GET, which carries it.
        samesite="Lax",
    )
    return response


@blueprint.get("/auth/oidc/callback")
async def oidc_callback() -> Response:
    svc = services()
    if not oidc_enabled():
        return await page("error.html", status=404, title="Page not found", reason="")
    try:
        pending = PendingSignIn.unseal(request.cookies.get(PENDING_COOKIE, ""), svc.hasher)
        if request.args.get("error"):
            raise OidcError(
                "Sign-in was cancelled or refused at your identity provider.",
                request.args.get("error", "")[:100],
            )
        found = await _client().finish(
            pending, state=request.args.get("state", ""), code=request.args.get("code", "")
        )
        if found.email is None or not found.email_verified:
            raise OidcError(
                "Your identity provider did not confirm your e-mail address, so we cannot "
                "link it to a Nichescope account. Sign in with your password instead.",
                f"sub={found.subject}",
            )
    except OidcError as err:
        return await _failed(err)
    user = await _account_for(found.email, found.name)
    session = await identity.start_session(svc, user.id)
    response = see_other(pending.next_path)
    identity.set_session_cookie(svc.settings, response, session)
    response.delete_cookie(PENDING_COOKIE, path=COOKIE_PATH)
    return response
