"""`/api/auth/*`: register, sign in and out, who am I, forgotten and reset passwords."""

from __future__ import annotations

from quart import Blueprint, Response
from quart_schema import document_response, validate_request, validate_response

from api.accounts import actions as identity
from api.accounts.actions import describe_me
from api.accounts.confirmation import confirm_account, resend_account_confirmation
from api.accounts.schemas import (
    ConfirmEmailRequest,
    ForgotPasswordRequest,
    LoginRequest,
    MeResponse,
    MessageResponse,
    RegisterRequest,
    ResetPasswordRequest,
    UpdateMeRequest,
)
from api.http.auth import client_ip, current_principal
from api.http.errors import found
from api.http.openapi import operation
from api.services import services

blueprint = Blueprint("accounts", __name__, url_prefix="/api/auth")

REGISTERED = (
    "If this e-mail can be registered, the account is ready: sign in with it, and confirm "
    "the address through the link mailed to it. "
    "If it was already registered, its owner has been told by e-mail."
)
CONFIRMED = "Your e-mail address is confirmed"
RESET_SENT = "If an account exists for this e-mail, a reset link is on its way."


@blueprint.post("/register")
@operation("registerUser", access="public")
@validate_request(RegisterRequest)
@validate_response(MessageResponse, 201)
async def register(data: RegisterRequest) -> tuple[MessageResponse, int]:
    """Create an account and its personal workspace (no payment card).

    The answer is the same whether or not the e-mail was taken, so nobody can learn who has
    an account; the owner of a taken e-mail gets a notice instead.
    """
    await identity.register_account(services(), str(data.email), data.password, data.name)
    return MessageResponse(message=REGISTERED), 201


@blueprint.post("/login")
@operation("loginUser", access="public")
@validate_request(LoginRequest)
@document_response(MessageResponse, 200)
async def login(data: LoginRequest) -> Response:
    """Sign in with e-mail and password; sets the `session_token` cookie (30 days).

    Limited against guessing (429 with Retry-After) per client IP, per (account, IP) and,
    for browsers that never signed in to the account (no `ns_device` cookie for it), by a
    per-account delay of at most a minute: never a lockout of the owner. A device cookie is
    trusted until the password changes or its browser fails that many sign-ins itself. Every
    sign-in gets a fresh session id; a session cookie the browser already held is ended.
    """
    svc = services()
    signed_in = await identity.check_password(svc, str(data.email), data.password)
    session = await identity.start_session(svc, signed_in.user.id)
    response = Response(
        MessageResponse(message="Signed in").model_dump_json(),
        status=200,
        content_type="application/json",
    )
    identity.set_session_cookie(svc.settings, response, session)
    identity.set_device_cookie(svc.settings, response, signed_in)
    return response


@blueprint.post("/logout")
@operation("logoutUser", access="public")
@document_response(MessageResponse, 200)
async def logout() -> Response:
    """End the session of the cookie, if any, and clear the cookie. Always 200."""
    svc = services()
    await identity.end_current_session(svc)
    response = Response(
        MessageResponse(message="Signed out").model_dump_json(),
        status=200,
        content_type="application/json",
    )
    identity.clear_session_cookie(svc.settings, response)
    return response


@blueprint.get("/me")
@operation("getCurrentUser")
@validate_response(MeResponse, 200)
async def me() -> MeResponse:
    """The signed-in user, their workspace and how this request authenticated."""
    svc = services()
    principal = current_principal()
    user = found(await svc.store.get_user(principal.user_id), "user")
    return await describe_me(svc, user, principal)


@blueprint.patch("/me")
@operation("updateCurrentUser")
@validate_request(UpdateMeRequest)
@validate_response(MeResponse, 200)
async def update_me(data: UpdateMeRequest) -> MeResponse:
    """Change the display name (the only profile field a user edits; e-mail is the login)."""
    svc = services()
    principal = current_principal()
    name = data.name.strip() if data.name and data.name.strip() else None
    user = found(await svc.store.set_user_name(principal.user_id, name), "user")
    return await describe_me(svc, user, principal)


@blueprint.post("/forgot-password")
@operation("forgotPassword", access="public")
@validate_request(ForgotPasswordRequest)
@validate_response(MessageResponse, 200)
async def forgot_password(data: ForgotPasswordRequest) -> MessageResponse:
    """E-mail a single-use reset link (valid one hour). Same answer whether or not the
    account exists; limited per e-mail and per IP so it cannot be used to flood an inbox."""
    await identity.send_password_reset(services(), str(data.email))
    return MessageResponse(message=RESET_SENT)


@blueprint.post("/reset-password")
@operation("resetPassword", access="public")
@validate_request(ResetPasswordRequest)
@validate_response(MessageResponse, 200)
async def reset_password(data: ResetPasswordRequest) -> MessageResponse:
    """Set a new password with a reset token; the token is single-use and every session of
    the user ends (sign in again). Every access token of the user is revoked too unless
    `revoke_tokens` is false."""
    await identity.reset_password(
        services(), data.token, data.password, revoke_tokens=data.revoke_tokens
    )
    return MessageResponse(message="Password changed; sign in with the new password")


@blueprint.post("/confirm-email")
@operation("confirmEmail", access="public", errors=(410,))
@validate_request(ConfirmEmailRequest)
@validate_response(MessageResponse, 200)
async def confirm_email(data: ConfirmEmailRequest) -> MessageResponse:
    """Prove the account's address with the link mailed to it (at registration, or by
    `resend`): single-use, valid 48 hours. 400 `invalid_token` for a token never issued;
    410 `token_used` or `token_expired`."""
    await confirm_account(services().mailing, data.token)
    return MessageResponse(message=CONFIRMED)


@blueprint.post("/confirm-email/resend")
@operation("resendEmailConfirmation")
@validate_response(MessageResponse, 200)
async def resend_confirmation() -> MessageResponse:
    """Mail a new confirmation link to the caller's address (earlier links stop working);
    nothing is sent when it is confirmed already. 429 past five mails to the address, or from
    the client's address, per window."""
    sent = await resend_account_confirmation(services().mailing, current_principal(), client_ip())
    if not sent:
        return MessageResponse(message="Your e-mail address is confirmed already")
    return MessageResponse(message="A new confirmation link is on its way")
