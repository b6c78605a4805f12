"""Links that prove an e-mail address: made, mailed and opened.

The machinery of the password reset and trial links, for the account's own address
(`api/accounts/confirmation.py`) and an alert channel's (`api/notifications/_confirm.py`): a
random secret that is in the link and nowhere else, its keyed digest in the store, single use,
dead after `LINK_HOURS`, and a newer link of the same subject kills the older ones.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from api.backend import Mailing
from api.http.errors import ApiError, BadRequest
from api.http.security import new_secret
from store import ConfirmationPurpose as Purpose
from store import Confirmed, NewConfirmation, Store

LINK_HOURS = 48
MAX_TOKEN_LENGTH = 200


class LinkGone(ApiError):
    """A link that was real, but is used or expired: ask for a new one."""

    status, code = 410, "token_gone"


async def mail_link(
    mailing: Mailing,
    purpose: Purpose,
    email: str,
    *,
    path: str,
    subject: str,
    body: Callable[[str], str],
    user_id: str | None = None,
    channel_id: str | None = None,
) -> None:
    """Store a new link of `purpose` for `email` and mail it: `body(link)` is the message.

    Raises `MailUnavailable` when the mail server refuses (the stored link then stays unused
    until the next one replaces it). Cancellation propagates.
    """
    secret = new_secret()
    await mailing.store.confirmations.add(
        NewConfirmation(
            token_hash=mailing.hasher.digest(secret),
            purpose=purpose,
            email=email,
            expires_at=mailing.store.clock() + timedelta(hours=LINK_HOURS),
            user_id=user_id,
            channel_id=channel_id,
        )
    )
    link = f"{mailing.settings.public_url}{path}?token={secret}"
    await mailing.mailer.send(email, subject, body(link))


async def open_link(mailing: Mailing, token: str, purpose: Purpose, *, ask_again: str) -> Confirmed:
    """Spend the link `token` of `purpose` (its address is proven from now on).

    Raises `BadRequest` (`invalid_token`) for a token never issued for this purpose, and
    `LinkGone` (410, `token_used` or `token_expired`) for one used or past `LINK_HOURS`;
    `ask_again` says where a new link comes from."""
    token = token.strip()
    confirmed = (
        await mailing.store.confirmations.use(mailing.hasher.digest(token), purpose)
        if token and len(token) <= MAX_TOKEN_LENGTH
        else Confirmed("unknown_token")
    )
    if confirmed.outcome == "used_token":
        raise LinkGone("This confirmation link was already used", code="token_used")
    if confirmed.outcome == "expired_token":
        raise LinkGone(
            f"This confirmation link has expired (links work for {LINK_HOURS} hours)",
            code="token_expired",
            suggest=[ask_again],
        )
    if confirmed.outcome != "confirmed":
        raise BadRequest(
            "This confirmation link is not valid", code="invalid_token", suggest=[ask_again]
        )
    return confirmed


async def proven_address(store: Store, user_id: str) -> str | None:
    """The account's address if its owner proved it, else None. Read from the store, never
    from the credential cache, so that a confirmation counts at once on every node."""
    user = await store.get_user(user_id)
    return user.email if user is not None and user.email_verified else None
