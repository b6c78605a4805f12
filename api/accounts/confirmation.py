"""Proving the account's own address: the link mailed at registration, sent again on request,
and opened.

Until its owner proves it, an address only names the account for signing in: anyone may
register any address, so an unproven one is never linked to an identity provider's sign-in
(`store/accounts/confirmations.claim_for_identity`) and makes no operator
(`api/http/auth.is_operator`).
A person with an unproven address signs in and works as usual, under a banner asking them to
confirm. Opening a password reset link or a trial link mailed to the same address proves it
too (the store does it as those links are used).
"""

from __future__ import annotations

import logging
from functools import partial

from api.backend import Mailing
from api.email_links import LINK_HOURS, mail_link, open_link, proven_address
from api.http.auth import Principal
from api.http.errors import TooManyRequests
from api.mail import MailUnavailable

log = logging.getLogger(__name__)

ASK_AGAIN = "Sign in and ask for a new link: POST /api/auth/confirm-email/resend"


def _body(public_url: str, link: str) -> str:
    return (
        "Someone (hopefully you) created a Nichescope account with this e-mail address.\n\n"
        f"Confirm that the address is yours within {LINK_HOURS} hours:\n{link}\n\n"
        "If you did not create it, ignore this message and do not open the link: an address "
        "nobody confirmed stays unlinked to anything. To take the account over instead, set "
        f"its password yourself at {public_url}/forgot-password.\n"
    )


async def mail_account_confirmation(mailing: Mailing, user_id: str, email: str) -> None:
    """Mail the account's confirmation link. Run after the registration's answer (its cost
    would tell a new address from a taken one); a mail server that refuses is logged, and
    the person asks again from the banner."""
    try:
        await mail_link(
            mailing,
            "account",
            email,
            path="/confirm-email",
            subject="Confirm your e-mail address for Nichescope",
            body=partial(_body, mailing.settings.public_url),
            user_id=user_id,
        )
    except MailUnavailable as err:
        log.warning("confirmation mail for %s not sent: %s", user_id, err.reason)


async def resend_account_confirmation(
    mailing: Mailing, principal: Principal, client_address: str
) -> bool:
    """Mail a new link to the caller's address (the older ones die); False, and nothing sent,
    when the address is proven already.

    Raises `TooManyRequests` past five mails per window to the address or from
    `client_address` (the limit reset and trial mails share), `MailUnavailable` when the mail server
    refuses."""
    if await proven_address(mailing.store, principal.user_id) is not None:
        return False
    wait = max(
        mailing.limiter.hit(f"to:{principal.email}"),
        mailing.limiter.hit(f"ip:{client_address}"),
    )
    if wait > 0.0:
        raise TooManyRequests(wait, "Too many confirmation e-mails; wait before asking again")
    await mail_link(
        mailing,
        "account",
        principal.email,
        path="/confirm-email",
        subject="Confirm your e-mail address for Nichescope",
        body=partial(_body, mailing.settings.public_url),
        user_id=principal.user_id,
    )
    return True


async def confirm_account(mailing: Mailing, token: str) -> None:
    """Open an account's confirmation link: its address is proven from now on.

    Raises `BadRequest` (`invalid_token`) or `LinkGone` (410, `token_used`/`token_expired`)."""
    await open_link(mailing, token, "account", ask_again=ASK_AGAIN)
