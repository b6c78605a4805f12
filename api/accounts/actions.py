"""Account actions shared by the JSON API (`rest.py`, `keys.py`) and the web pages.

Each function takes the app's `Services` from the handler that calls it (signing in and out
uses nearly all of them: the store, the token hasher, the credential cache, the mailer and
every sign-in limiter), or only the `Settings` for a cookie. They still work inside a request,
whose cookies, client address and after-response tasks they read. Each raises the
same `ApiError` subclasses the JSON API answers with; the pages turn them into sentences.
Nothing here builds a response body.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import timedelta

from quart import Response, request

from api.accounts.confirmation import mail_account_confirmation
from api.accounts.schemas import (
    MeResponse,
)
from api.billing.actions import summary as billing_summary
from api.http.after_response import after_response
from api.http.auth import SESSION_COOKIE, Principal, client_ip, is_operator
from api.http.errors import BadRequest, InvalidCredentials, TooManyRequests
from api.http.security import hash_password, new_access_token, new_id, new_secret, verify_password
from api.mail import normalise_email
from api.services import Services
from api.settings import Settings
from store import (
    AccessTokenRecord,
    AlreadyExists,
    Credentials,
    NewAccessToken,
    NewUser,
    UserRecord,
)

# Set at each password sign-in: this browser has signed in to that account before.
DEVICE_COOKIE = "ns_device"
DEVICE_COOKIE_DAYS = 365


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A password that matched: its user, and the device cookie this browser gets."""

    user: UserRecord
    device_cookie: str


@dataclass(frozen=True, slots=True)
class NewSession:
    """A session just stored; `secret` goes into the cookie and nowhere else."""

    secret: str
    max_age_seconds: int


@dataclass(frozen=True, slots=True)
class MintedToken:
    record: AccessTokenRecord
    plaintext: str


async def register_account(svc: Services, email: str, password: str, name: str | None) -> None:
    """Create an account and its workspace, and mail the link that proves its address (the
    address counts for nothing else until then: `confirmation.py`). A taken e-mail is not an
    error (no enumeration): its owner is told by e-mail instead, at most once per window
    (`owner_notice_limiter`); never a confirmation link, which would let whoever registered
    an address first have it confirmed by its owner's click.

    Raises `TooManyRequests` past `NICHESCOPE_LOGIN_ATTEMPTS_PER_IP` registrations per IP or
    five per e-mail per window, checked before the password is hashed: each attempt costs an
    argon2 hash and maybe an e-mail, which nobody may make us pay without bound."""
    email = normalise_email(email)
    wait = max(
        svc.register_ip_limiter.hit(client_ip()),
        svc.mail_limiter.hit(f"register-to:{email}"),
    )
    if wait > 0.0:
        raise TooManyRequests(wait, "Too many registrations; wait before trying again")
    password_hash = await hash_password(password)
    try:
        user = await svc.store.create_user(
            NewUser(email=email, name=name, password_hash=password_hash)
        )
    except AlreadyExists:
        if svc.owner_notice_limiter.hit(email) > 0.0:
            return  # the owner was told within the window: once is enough
        # After the answer, not before it: the mail's cost would tell who has an account.
        after_response(_tell_owner_of_registration, svc, email)
        return
    # The address counts only once its owner opens this link (`confirmation.py`); also after
    # the answer, so that a new address costs what a taken one does.
    after_response(mail_account_confirmation, svc.mailing, user.id, email)


async def _tell_owner_of_registration(svc: Services, email: str) -> None:
    await svc.mailer.send(
        email,
        "Someone tried to register with your e-mail",
        "Somebody tried to create a Nichescope account with this e-mail address.\n"
        "You already have one. If it was you, sign in or reset your password at "
        f"{svc.settings.public_url}/forgot-password.\n",
    )


async def check_password(svc: Services, email: str, password: str) -> SignedIn:
    """The user whose e-mail and password these are, and this browser's new device cookie.

    Guessing is slowed without locking the owner out (OWASP's authentication guidance):
    - per address: `login_attempts_per_ip` attempts per window, whatever the account;
    - per (account, address): `login_failures_per_account` failures per window, after which
      that address may not try that account until the window moves on;
    - per account, for browsers that never signed in to it (no device cookie for it): past
      the same number of failures, each attempt waits 1, 2, 4 ... at most 60 seconds after
      the latest failure. A browser that signed in to the account before skips this wait,
      so failures made by others never keep the owner out, until the password changes or
      that browser fails as many times itself (`trusted_device`).
    Raises `TooManyRequests` (with the wait) and `InvalidCredentials` on a wrong pair (same
    answer and timing whether or not the account exists).
    """
    email = normalise_email(email)
    pair = f"{email}|{client_ip()}"
    wait = svc.login_ip_limiter.hit(client_ip()) or svc.login_pair_limiter.retry_after(pair)
    if wait > 0.0:
        raise TooManyRequests(wait, "Too many sign-in attempts; wait before trying again")
    credentials = await svc.store.get_credentials(email)
    device = trusted_device(svc, credentials)
    wait = 0.0 if device is not None else svc.login_account_delay.retry_after(email)
    if wait > 0.0:
        raise TooManyRequests(wait, "Too many failed sign-ins on this account; wait a moment")
    password_hash = credentials.password_hash if credentials else None
    # Verified first, whatever was found: with no account (or no password) the dummy hash is
    # verified instead, so an unknown e-mail costs the same argon2 work as a wrong password.
    matches = await verify_password(password_hash, password)
    if credentials is None or not matches:
        svc.login_pair_limiter.hit(pair)
        svc.login_account_delay.failed(email)
        if device is not None:
            svc.login_device_failures.hit(device)
        raise InvalidCredentials()
    svc.login_pair_limiter.reset(pair)
    svc.login_account_delay.reset(email)
    nonce = new_secret()
    return SignedIn(credentials.user, f"{nonce}.{_device_signature(svc, credentials, nonce)}")


def _device_signature(svc: Services, credentials: Credentials, nonce: str) -> str:
    # Bound to the password hash, which every reset or change of the password replaces (a
    # fresh salt even for the same password): a browser trusted under the old password,
    # maybe the thief's, is not trusted under the new one.
    user_id, password_hash = credentials.user.id, credentials.password_hash
    return svc.hasher.digest(f"device:{user_id}:{password_hash}:{nonce}")


def trusted_device(svc: Services, credentials: Credentials | None) -> str | None:
    """This browser's device cookie (OWASP's), as the key its failures are counted under, if
    it is trusted on `credentials`' account: set at a sign-in with the current password,
    and fewer than `login_failures_per_account` failed sign-ins made with it since (a
    successful sign-in gives it a new cookie). None otherwise."""
    nonce, _, signature = request.cookies.get(DEVICE_COOKIE, "").partition(".")
    if credentials is None or not nonce or len(nonce) > 100 or not signature:
        return None
    if not hmac.compare_digest(signature, _device_signature(svc, credentials, nonce)):
        return None
    if svc.login_device_failures.retry_after(signature) > 0.0:
        return None
    return signature


def set_device_cookie(settings: Settings, response: Response, signed_in: SignedIn) -> None:
    """Remember that this browser signed in to the account: its later sign-ins skip the
    per-account delay that failures made elsewhere impose."""
    response.set_cookie(
        DEVICE_COOKIE,
        signed_in.device_cookie,
        max_age=DEVICE_COOKIE_DAYS * 86400,
        path="/",
        secure=settings.cookie_secure,
        httponly=True,
        samesite="Lax",
    )


async def end_current_session(svc: Services) -> None:
    """Delete the session named by the request's cookie, if any (idempotent)."""
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie and len(cookie) <= 200:
        digest = svc.hasher.digest(cookie)
        await svc.store.delete_session(digest)
        svc.sessions.drop(digest)


async def start_session(svc: Services, user_id: str) -> NewSession:
    """Store a fresh session for `user_id`. A session the browser already held is ended first,
    so a planted cookie can never become a signed-in one (session fixation)."""
    await end_current_session(svc)
    secret = new_secret()
    lifetime = timedelta(days=svc.settings.session_days)
    await svc.store.add_session(
        token_hash=svc.hasher.digest(secret),
        user_id=user_id,
        expires_at=svc.store.clock() + lifetime,
    )
    return NewSession(secret=secret, max_age_seconds=int(lifetime.total_seconds()))


def set_session_cookie(settings: Settings, response: Response, session: NewSession) -> None:
    response.set_cookie(
        SESSION_COOKIE,
        session.secret,
        max_age=session.max_age_seconds,
        path="/",
        secure=settings.cookie_secure,
        httponly=True,
        samesite="Lax",
    )


def clear_session_cookie(settings: Settings, response: Response) -> None:
    response.delete_cookie(
        SESSION_COOKIE,
        path="/",
        secure=settings.cookie_secure,
        httponly=True,
        samesite="Lax",
    )


async def send_password_reset(svc: Services, email: str) -> None:
    """E-mail a single-use reset link if the account exists; silent otherwise.

    Raises `TooManyRequests` past five requests per IP or per e-mail per window.
    """
    email = normalise_email(email)
    wait = max(svc.mail_limiter.hit(f"ip:{client_ip()}"), svc.mail_limiter.hit(f"to:{email}"))
    if wait > 0.0:
        raise TooManyRequests(wait, "Too many reset requests; wait before trying again")
    credentials = await svc.store.get_credentials(email)
    if credentials is not None:
        # The link is made and mailed after the answer, so that an existing account's answer
        # costs what an unknown one's does.
        after_response(_mail_reset_link, svc, credentials.user.id, email)


async def _mail_reset_link(svc: Services, user_id: str, email: str) -> None:
    secret = new_secret()
    await svc.store.add_password_reset(
        token_hash=svc.hasher.digest(secret),
        user_id=user_id,
        expires_at=svc.store.clock() + timedelta(minutes=svc.settings.reset_token_minutes),
    )
    tokens = [t for t in await svc.store.list_access_tokens(user_id) if not t.revoked_at]
    await svc.mailer.send(
        email,
        "Reset your Nichescope password",
        "Someone (hopefully you) asked to reset your Nichescope password.\n\n"
        f"Reset it here within {svc.settings.reset_token_minutes} minutes:\n"
        f"{svc.settings.public_url}/reset-password?token={secret}\n\n"
        + tokens_paragraph(tokens)
        + "If it was not you, ignore this message; your password stays as it is.\n",
    )


def tokens_paragraph(tokens: list[AccessTokenRecord]) -> str:
    """The reset e-mail's account of the live access tokens, which a reset can revoke."""
    if not tokens:
        return ""
    lines = [
        f"- {t.label} ({', '.join(t.scopes)}), created {t.created_at:%Y-%m-%d}, "
        + (f"last used {t.last_used_at:%Y-%m-%d %H:%M} UTC" if t.last_used_at else "never used")
        for t in tokens
    ]
    return (
        f"Your account has {len(tokens)} active access token(s), which keep working after a "
        "password change unless you revoke them (the reset page offers to, ticked by default):\n"
        + "\n".join(lines)
        + "\n\n"
    )


async def tokens_at_reset(svc: Services, token: str) -> list[AccessTokenRecord] | None:
    """The live access tokens a reset link's account holds; None for a dead link."""
    if not token or len(token) > 200:
        return None
    return await svc.store.tokens_at_reset(svc.hasher.digest(token))


async def reset_password(svc: Services, token: str, password: str, *, revoke_tokens: bool) -> None:
    """Set a new password with a reset token and end every session of the user; with
    `revoke_tokens`, revoke every access token too (recovering a stolen account must be able
    to evict the thief's tokens, not only their sessions).

    Raises `BadRequest` (code `invalid_token`) when the token is unknown, used or expired.
    """
    password_hash = await hash_password(password)
    ended = await svc.store.reset_password(
        svc.hasher.digest(token), password_hash, revoke_tokens=revoke_tokens
    )
    if ended is None:
        raise BadRequest(
            "This reset link is invalid, already used or expired",
            code="invalid_token",
            suggest=["Ask for a new link at /forgot-password"],
        )
    svc.sessions.drop(*ended)


async def mint_access_token(
    svc: Services, *, user_id: str, workspace_id: str, label: str, scopes: tuple[str, ...]
) -> MintedToken:
    """Create a personal access token; the plaintext exists only in the returned value."""
    plaintext = new_access_token()
    record = await svc.store.add_access_token(
        NewAccessToken(
            token_id=new_id("key"),
            user_id=user_id,
            workspace_id=workspace_id,
            label=label,
            scopes=scopes,
            token_hash=svc.hasher.digest(plaintext),
        )
    )
    return MintedToken(record=record, plaintext=plaintext)


async def describe_me(svc: Services, user: UserRecord, principal: Principal) -> MeResponse:
    return MeResponse.model_validate(
        {
            "user": {
                "id": user.id,
                "email": user.email,
                "name": user.name,
                "created_at": user.created_at,
                "email_verified": user.email_verified,
                "email_verified_at": user.email_verified_at,
            },
            "workspace": {"id": principal.workspace_id},
            "auth": {
                "via": principal.via,
                "scopes": sorted(principal.scopes),
                "token_id": principal.token_id,
            },
            "operator": is_operator(svc.settings, user),
            "billing": await billing_summary(svc.billing, principal.workspace_id),
        }
    )
