"""Who is calling: a browser session cookie or a personal access token, checked before views.

Every `/api/*` view declares an access level with `@operation(access=...)`:
`public` (no credentials), `user` (session or token; tokens need `read` for GET/HEAD and
`write` for everything else), `browser` (a session only: a token gets 403), `operator`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from quart import Quart, current_app, g, request
from quart_schema.openapi import QUART_SCHEMA_OPERATION_ID_ATTRIBUTE

from api.http.cross_site import refuse_cross_site_writes
from api.http.errors import Forbidden, InsufficientScope, Unauthorized
from api.http.openapi import access_of
from api.http.security import looks_like_access_token
from api.services import services
from api.settings import Settings
from store import SessionOwner, TokenOwner, UserRecord

SESSION_COOKIE = "session_token"
# Public operations that act on the session cookie they are sent with.
COOKIE_ACTIONS = frozenset({"logoutUser", "loginUser"})
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
OwnerT = TypeVar("OwnerT", SessionOwner, TokenOwner)


@dataclass(frozen=True, slots=True)
class Principal:
    user_id: str
    email: str
    workspace_id: str
    via: Literal["session", "token"]
    scopes: frozenset[str]
    token_id: str | None = None


def client_ip() -> str:
    """The socket peer, or the first untrusted hop of X-Forwarded-For behind a trusted proxy."""
    peer = request.remote_addr or "unknown"
    trusted = services().settings.trusted_proxies
    if peer not in trusted:
        return peer
    hops = [hop.strip() for hop in request.headers.get("X-Forwarded-For", "").split(",")]
    for hop in reversed([h for h in hops if h]):
        if hop not in trusted:
            return hop
    return peer


async def _owner(
    digest: str,
    cached: Callable[[str], OwnerT | None],
    load: Callable[[str], Awaitable[OwnerT | None]],
) -> OwnerT | None:
    """Whose credential `digest` is: this node's cache, else the store (then cached, unless
    a credential ended while the store was asked: see `CredentialCache`)."""
    owner = cached(digest)
    if owner is None:
        cache = services().sessions
        looked_up_at = cache.generation()  # before the read, so no ending can slip between
        owner = await load(digest)
        if owner is not None:
            cache.put(digest, owner, looked_up_at=looked_up_at)
    return owner


async def authenticate_bearer(header: str) -> Principal:
    """The principal of an `Authorization: Bearer nsc_...` header value, or `Unauthorized`
    (missing scheme, malformed, unknown or revoked token). Never looks at cookies."""
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not looks_like_access_token(token):
        raise Unauthorized()
    svc = services()
    digest = svc.hasher.digest(token)
    # A cache miss asks the store, which stamps `last_used_at` when a minute old or more.
    owner = await _owner(digest, svc.sessions.get_token, svc.store.use_access_token)
    if owner is None:
        raise Unauthorized()
    return Principal(
        user_id=owner.user.id,
        email=owner.user.email,
        workspace_id=owner.token.workspace_id,
        via="token",
        scopes=frozenset(owner.token.scopes),
        token_id=owner.token.id,
    )


async def session_principal() -> Principal | None:
    """The principal of the request's session cookie, if it names a live session."""
    cookie = request.cookies.get(SESSION_COOKIE)
    if not cookie or len(cookie) > 200:
        return None
    svc = services()
    digest = svc.hasher.digest(cookie)
    owner = await _owner(digest, svc.sessions.get, svc.store.find_session)
    if owner is None:
        return None
    if owner.expires_at <= svc.store.clock():
        svc.sessions.drop(digest)
        return None
    return Principal(
        user_id=owner.user.id,
        email=owner.user.email,
        workspace_id=owner.user.workspace_id,
        via="session",
        scopes=frozenset({"read", "write"}),
    )


async def authenticate() -> Principal:
    """The caller, or `Unauthorized`. A bearer header, when present, is the only credential
    considered: agent traffic never falls back to cookies."""
    header = request.headers.get("Authorization")
    if header is not None:
        return await authenticate_bearer(header)
    principal = await session_principal()
    if principal is None:
        raise Unauthorized()
    return principal


def current_principal() -> Principal:
    principal: Principal | None = g.get("principal")
    if principal is None:  # a view declared public but asked for a caller: a bug
        raise RuntimeError("no authenticated principal on a public route")
    return principal


async def enforce_access() -> None:
    """`before_request` hook: authenticate and authorise according to the view's access level."""
    view = current_app.view_functions.get(request.endpoint or "")
    if view is None or not request.path.startswith("/api/"):
        return
    access = access_of(view)
    if access == "public":
        # A public write may still act on the cookie it carries (logout ends its session,
        # sign-in ends the one it replaces), so the cross-site rule follows the cookie, not
        # the access level: a sibling origin's text/plain POST must not sign anyone out. The
        # other public writes ignore the cookie (a Stripe webhook is judged by its signature).
        acts_on_cookie = getattr(view, QUART_SCHEMA_OPERATION_ID_ATTRIBUTE, "") in COOKIE_ACTIONS
        writes = request.method not in READ_METHODS
        if writes and acts_on_cookie and SESSION_COOKIE in request.cookies:
            refuse_cross_site_writes()
        return
    principal = await authenticate()
    if access == "browser" and principal.via != "session":
        raise Forbidden(
            "This operation needs a signed-in browser session; access tokens cannot manage keys",
            suggest=["Sign in at /login and use /account/keys"],
        )
    needed = "read" if request.method in READ_METHODS else "write"
    if needed not in principal.scopes:
        raise InsufficientScope(needed)
    svc = services()
    if access == "operator" and not is_operator(
        svc.settings, await svc.store.get_user(principal.user_id)
    ):
        raise Forbidden("Operators only", suggest=["Ask an administrator to add you"])
    if principal.via == "session" and needed == "write":
        refuse_cross_site_writes()
    g.principal = principal


def is_operator(settings: Settings, user: UserRecord | None) -> bool:
    """Whether `user` is an operator: its address is listed in `NICHESCOPE_OPERATORS` and its
    owner proved it. A listed address nobody proved makes no operator, or whoever registered
    it first would be one. Callers pass a user read from the store, not from the credential
    cache, so that a confirmation counts at once."""
    if user is None or not user.email_verified:
        return False
    return user.email.lower() in settings.operators


def install(app: Quart) -> None:
    app.before_request(enforce_access)
