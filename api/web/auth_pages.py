"""Sign-up, sign-in, sign-out, forgotten and reset password pages.

Each POST checks its CSRF token first, validates with the JSON API's own request models and
calls the same `api.accounts.actions` functions as `/api/auth/*` (same limits, same e-mails).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from quart import Response, request

from api.accounts import actions as identity
from api.accounts.schemas import (
    ForgotPasswordRequest,
    LoginRequest,
    RegisterRequest,
    ResetPasswordRequest,
)
from api.http.errors import BadRequest, InvalidCredentials, TooManyRequests
from api.services import services
from api.web import csrf, flash
from api.web._blueprint import blueprint
from api.web._render import field_errors, page, person, safe_next, see_other


def _wait_words(err: TooManyRequests) -> str:
    seconds = int(err.extra.get("retry_after_seconds", 60))
    if seconds < 60:
        return f"Too many attempts. Try again in {seconds} second{'s' if seconds != 1 else ''}."
    minutes = (seconds + 59) // 60
    return f"Too many attempts. Try again in {minutes} minute{'s' if minutes != 1 else ''}."


def _waiting(response: Response, err: TooManyRequests) -> Response:
    """A page's 429 says how long in `Retry-After` too, as the API's does: a browser or a
    script reading the form's answer need not parse the sentence."""
    response.headers.update(err.headers)
    return response


@blueprint.get("/")
async def home() -> Response:
    return see_other("/dashboard" if await person() else "/login")


@blueprint.get("/signup")
async def signup_form() -> Response:
    if await person():
        return see_other("/dashboard")
    return await page("signup.html", form={}, errors={})


@blueprint.post("/signup")
async def signup() -> Response:
    await csrf.check("pre")
    form = await request.form
    values = {"email": form.get("email", "").strip(), "password": form.get("password", "")}
    if form.get("name", "").strip():
        values["name"] = form["name"].strip()
    try:
        data = RegisterRequest.model_validate(values)
    except ValidationError as err:
        return await page("signup.html", status=422, form=values, errors=field_errors(err))
    try:
        await identity.register_account(services(), str(data.email), data.password, data.name)
    except TooManyRequests as err:
        words = _wait_words(err)
        return _waiting(
            await page("signup.html", status=429, form=values, errors={}, error=words), err
        )
    return see_other("/login?notice=registered")


@blueprint.get("/login")
async def login_form() -> Response:
    if await person():
        return see_other(safe_next(request.args.get("next")))
    return await page("login.html", form={}, errors={}, next=request.args.get("next", ""))


@blueprint.post("/login")
async def login() -> Response:
    svc = services()
    await csrf.check("pre")
    form = await request.form
    values = {"email": form.get("email", "").strip(), "password": form.get("password", "")}
    next_path = safe_next(form.get("next"))

    async def again(status: int, errors: dict[str, str], message: str | None = None) -> Response:
        shown = {"email": values["email"]}
        return await page(
            "login.html", status=status, form=shown, errors=errors, error=message, next=next_path
        )

    try:
        data = LoginRequest.model_validate(values)
    except ValidationError as err:
        return await again(422, field_errors(err))
    try:
        signed_in = await identity.check_password(svc, str(data.email), data.password)
    except InvalidCredentials:
        return await again(401, {}, "That e-mail and password do not match. Check both and retry.")
    except TooManyRequests as err:
        return _waiting(await again(429, {}, _wait_words(err)), err)
    session = await identity.start_session(svc, signed_in.user.id)
    response = see_other(next_path)
    identity.set_session_cookie(svc.settings, response, session)
    identity.set_device_cookie(svc.settings, response, signed_in)
    return response


@blueprint.post("/logout")
async def logout() -> Response:
    svc = services()
    await csrf.check("session")
    await identity.end_current_session(svc)
    response = see_other("/login?notice=signed-out")
    identity.clear_session_cookie(svc.settings, response)
    return response


@blueprint.get("/forgot-password")
async def forgot_form() -> Response:
    """The form; after it was sent (`?notice=reset-sent`), what happens next instead."""
    if request.args.get("notice") != "reset-sent":
        return await page("forgot.html", form={}, errors={}, sent=False)
    # Without SMTP (a local or demo set-up) the page says where the message went; it never
    # shows the link itself, which would hand anyone the reset of any account they name.
    mail = services()
    outbox = None if mail.mailer.uses_smtp else str(mail.settings.outbox_dir)
    return await page("forgot.html", form={}, errors={}, sent=True, outbox=outbox)


@blueprint.post("/forgot-password")
async def forgot() -> Response:
    await csrf.check("pre")
    form = await request.form
    values = {"email": form.get("email", "").strip()}
    try:
        data = ForgotPasswordRequest.model_validate(values)
    except ValidationError as err:
        return await page("forgot.html", status=422, form=values, errors=field_errors(err))
    try:
        await identity.send_password_reset(services(), str(data.email))
    except TooManyRequests as err:
        words = _wait_words(err)
        return _waiting(
            await page("forgot.html", status=429, form=values, errors={}, error=words), err
        )
    # The address typed goes to the next page in the sealed one-shot cookie, not the URL.
    sent = see_other("/forgot-password?notice=reset-sent")
    return flash.carry(sent, "/forgot-password", sent_to=str(data.email))


DEAD_RESET_LINK = "This reset link is invalid, already used or expired. Ask for a new one."


@blueprint.get("/reset-password")
async def reset_form() -> Response:
    token = request.args.get("token", "")
    return await _reset_page(token, errors={})


async def _reset_page(token: str, *, status: int = 200, **context: Any) -> Response:
    """The reset form, with the account's live access tokens offered for revocation (a link
    that no longer works shows the "ask for a new link" state instead)."""
    tokens = await identity.tokens_at_reset(services(), token)
    if token and tokens is None:
        context.setdefault("error", DEAD_RESET_LINK)
    return await page(
        "reset.html",
        status=status,
        token=token if tokens is not None else "",
        tokens=tokens or [],
        **context,
    )


@blueprint.post("/reset-password")
async def reset() -> Response:
    svc = services()
    await csrf.check("pre")
    form = await request.form
    values = {"token": form.get("token", ""), "password": form.get("password", "")}
    # The box is ticked by default; a form that showed no box (no tokens then) revokes any
    # token created since, rather than keep it.
    revoke_tokens = "revoke_tokens_offered" not in form or form.get("revoke_tokens") == "on"
    try:
        data = ResetPasswordRequest.model_validate({**values, "revoke_tokens": revoke_tokens})
    except ValidationError as err:
        return await _reset_page(values["token"], status=422, errors=field_errors(err))
    try:
        await identity.reset_password(
            svc, data.token, data.password, revoke_tokens=data.revoke_tokens
        )
    except BadRequest:
        return await page(
            "reset.html",
            status=400,
            token="",
            errors={},
            error=DEAD_RESET_LINK,
        )
    response = see_other("/login?notice=password-changed")
    # Every session of the account has just ended, this browser's included.
    identity.clear_session_cookie(svc.settings, response)
    return response
