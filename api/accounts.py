"""`/api/auth/*`: register, sign in and out, who am I, forgotten and reset passwords."""

from __future__ import annotations

from datetime import timedelta

from quart import Blueprint, Response, request
from quart_schema import document_response, validate_request, validate_response

from store import AlreadyExists, UserRecord

from .auth import SESSION_COOKIE, Principal, client_ip, current_principal
from .errors import BadRequest, InvalidCredentials, NotFound, TooManyRequests
from .openapi import operation
from .schemas import (
    ForgotPasswordRequest,
    LoginRequest,
    MeResponse,
    MessageResponse,
    RegisterRequest,
    ResetPasswordRequest,
    UpdateMeRequest,
)
from .security import hash_password, new_id, new_secret, verify_password
from .services import services

blueprint = Blueprint("accounts", __name__, url_prefix="/api/auth")

REGISTERED = (
    "If this e-mail can be registered, the account is ready: sign in with it. "
    "If it was already registered, its owner has been told by e-mail."
)
RESET_SENT = "If an account exists for this e-mail, a reset link is on its way."


def _normalise(email: str) -> str:
    return email.strip().lower()


@blueprint.post("/register")
@operation("registerUser", access="public")
@validate_request(RegisterRequest)
@validate_response(MessageResponse, 201)
async def register(data: RegisterRequest) -> tuple[MessageResponse, int]:
    """Create an account and its personal workspace (no payment card).

    The answer is the same whether or not the e-mail was taken, so nobody can learn who has
    an account; the owner of a taken e-mail gets a notice instead.
    """
    svc = services()
    email = _normalise(str(data.email))
    password_hash = await hash_password(data.password)
    try:
        await svc.store.create_user(
            user_id=new_id("usr"),
            workspace_id=new_id("ws"),
            email=email,
            name=data.name,
            password_hash=password_hash,
        )
    except AlreadyExists:
        await svc.mailer.send(
            email,
            "Someone tried to register with your e-mail",
            "Somebody tried to create a Nichescope account with this e-mail address.\n"
            "You already have one. If it was you, sign in or reset your password at "
            f"{svc.settings.public_url}/forgot-password.\n",
        )
    return MessageResponse(message=REGISTERED), 201


@blueprint.post("/login")
@operation("loginUser", access="public")
@validate_request(LoginRequest)
@document_response(MessageResponse, 200)
async def login(data: LoginRequest) -> Response:
    """Sign in with e-mail and password; sets the `session_token` cookie (30 days).

    Limited per client IP and per account against guessing (429 with Retry-After). Every
    sign-in gets a fresh session id; a session cookie the browser already held is ended.
    """
    svc = services()
    email = _normalise(str(data.email))
    wait = svc.login_ip_limiter.hit(client_ip())
    if wait == 0.0:
        wait = svc.login_account_limiter.retry_after(email)
    if wait > 0.0:
        raise TooManyRequests(wait, "Too many sign-in attempts; wait before trying again")
    credentials = await svc.store.get_credentials(email)
    password_hash = credentials.password_hash if credentials else None
    if credentials is None or not await verify_password(password_hash, data.password):
        svc.login_account_limiter.hit(email)
        raise InvalidCredentials()
    svc.login_account_limiter.reset(email)

    old_cookie = request.cookies.get(SESSION_COOKIE)
    if old_cookie:
        old_digest = svc.hasher.digest(old_cookie)
        await svc.store.delete_session(old_digest)
        svc.sessions.drop(old_digest)

    secret = new_secret()
    lifetime = timedelta(days=svc.settings.session_days)
    await svc.store.add_session(
        token_hash=svc.hasher.digest(secret),
        user_id=credentials.user.id,
        expires_at=svc.store.clock() + lifetime,
    )
    response = Response(
        MessageResponse(message="Signed in").model_dump_json(),
        status=200,
        content_type="application/json",
    )
    response.set_cookie(
        SESSION_COOKIE,
        secret,
        max_age=int(lifetime.total_seconds()),
        path="/",
        secure=svc.settings.cookie_secure,
        httponly=True,
        samesite="Lax",
    )
    return response


@blueprint.post("/logout")
@operation("logoutUser", access="public")
@document_response(MessageResponse, 200)
async def logout() -> Response:
    """End the session of the cookie, if any, and clear the cookie. Always 200."""
    svc = services()
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie and len(cookie) <= 200:
        digest = svc.hasher.digest(cookie)
        await svc.store.delete_session(digest)
        svc.sessions.drop(digest)
    response = Response(
        MessageResponse(message="Signed out").model_dump_json(),
        status=200,
        content_type="application/json",
    )
    response.delete_cookie(
        SESSION_COOKIE, path="/", secure=svc.settings.cookie_secure, httponly=True, samesite="Lax"
    )
    return response


def _me(user: UserRecord, principal: Principal) -> MeResponse:
    return MeResponse.model_validate(
        {
            "user": {
                "id": user.id,
                "email": user.email,
                "name": user.name,
                "created_at": user.created_at,
            },
            "workspace": {"id": principal.workspace_id},
            "auth": {
                "via": principal.via,
                "scopes": sorted(principal.scopes),
                "token_id": principal.token_id,
            },
            "operator": user.email in services().settings.operators,
        }
    )


@blueprint.get("/me")
@operation("getCurrentUser")
@validate_response(MeResponse, 200)
async def me() -> MeResponse:
    """The signed-in user, their workspace and how this request authenticated."""
    principal = current_principal()
    user = await services().store.get_user(principal.user_id)
    if user is None:
        raise NotFound("user")
    return _me(user, principal)


@blueprint.patch("/me")
@operation("updateCurrentUser")
@validate_request(UpdateMeRequest)
@validate_response(MeResponse, 200)
async def update_me(data: UpdateMeRequest) -> MeResponse:
    """Change the display name (the only profile field a user edits; e-mail is the login)."""
    principal = current_principal()
    name = data.name.strip() if data.name and data.name.strip() else None
    user = await services().store.set_user_name(principal.user_id, name)
    if user is None:
        raise NotFound("user")
    return _me(user, principal)


@blueprint.post("/forgot-password")
@operation("forgotPassword", access="public")
@validate_request(ForgotPasswordRequest)
@validate_response(MessageResponse, 200)
async def forgot_password(data: ForgotPasswordRequest) -> MessageResponse:
    """E-mail a single-use reset link (valid one hour). Same answer whether or not the
    account exists; limited per e-mail and per IP so it cannot be used to flood an inbox."""
    svc = services()
    email = _normalise(str(data.email))
    wait = max(svc.mail_limiter.hit(f"ip:{client_ip()}"), svc.mail_limiter.hit(f"to:{email}"))
    if wait > 0.0:
        raise TooManyRequests(wait, "Too many reset requests; wait before trying again")
    credentials = await svc.store.get_credentials(email)
    if credentials is not None:
        secret = new_secret()
        await svc.store.add_password_reset(
            token_hash=svc.hasher.digest(secret),
            user_id=credentials.user.id,
            expires_at=svc.store.clock() + timedelta(minutes=svc.settings.reset_token_minutes),
        )
        await svc.mailer.send(
            email,
            "Reset your Nichescope password",
            "Someone (hopefully you) asked to reset your Nichescope password.\n\n"
            f"Reset it here within {svc.settings.reset_token_minutes} minutes:\n"
            f"{svc.settings.public_url}/reset-password?token={secret}\n\n"
            "If it was not you, ignore this message; your password stays as it is.\n",
        )
    return MessageResponse(message=RESET_SENT)


@blueprint.post("/reset-password")
@operation("resetPassword", access="public")
@validate_request(ResetPasswordRequest)
@validate_response(MessageResponse, 200)
async def reset_password(data: ResetPasswordRequest) -> MessageResponse:
    """Set a new password with a reset token; the token is single-use and every session of
    the user ends (sign in again)."""
    svc = services()
    password_hash = await hash_password(data.password)
    ended = await svc.store.reset_password(svc.hasher.digest(data.token), password_hash)
    if ended is None:
        raise BadRequest(
            "This reset link is invalid, already used or expired",
            code="invalid_token",
            suggest=["Ask for a new link at /forgot-password"],
        )
    svc.sessions.drop(*ended)
    return MessageResponse(message="Password changed; sign in with the new password")
