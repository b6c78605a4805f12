"""E-mail channels wait for their recipient: the link mailed to the address, sent again on
request, and opened.

Anyone may type anyone's address into a channel, so an e-mail channel sends nothing (no alert
is even queued for it, and a test is refused) until the person reading that mailbox agrees by
opening the link. The one exception is the caller's own address once they proved it
(`api/accounts/confirmation.py`): they have agreed already. The mail carries no word the
requester chose (not the channel's name), so it cannot carry someone's message to a stranger,
and at most five go to one address, or from one workspace, per window.
"""

from __future__ import annotations

from api.backend import Mailing
from api.email_links import LINK_HOURS, mail_link, open_link
from api.http.errors import Conflict, TooManyRequests
from api.mail import normalise_email
from store import ChannelRecord

ASK_AGAIN = "Ask the channel's owner to send a new link from the Alerts page"


class ChannelUnconfirmed(Conflict):
    """An e-mail channel whose recipient has not agreed yet: nothing is sent to it."""

    code = "channel_unconfirmed"

    def __init__(self) -> None:
        super().__init__(
            "This e-mail channel waits for its recipient to open the link mailed to the "
            "address; nothing is sent to it before",
            suggest=[
                "Mail the link again: POST /api/notifications/channels/{id}/send-confirmation"
            ],
        )


def _body(link: str) -> str:
    return (
        "Someone using Nichescope asked to send alerts to this e-mail address. Nothing is "
        "sent to it unless you agree.\n\n"
        f"To receive them, confirm within {LINK_HOURS} hours:\n{link}\n\n"
        "If you did not expect this, ignore this message: no alert is ever sent to an "
        "address that was not confirmed.\n"
    )


def check_mail_allowance(mailing: Mailing, workspace_id: str, address: str) -> None:
    """`TooManyRequests` past five confirmation mails per window to `address` (with the
    reset and trial mails to it) or from the workspace."""
    limiter = mailing.limiter
    to = normalise_email(address)
    wait = max(limiter.hit(f"to:{to}"), limiter.hit(f"channels-of:{workspace_id}"))
    if wait > 0.0:
        raise TooManyRequests(wait, "Too many confirmation e-mails; wait before asking again")


async def mail_channel_confirmation(mailing: Mailing, channel: ChannelRecord, address: str) -> None:
    """Mail `address` the link that confirms `channel` (earlier links of it stop working).
    Raises `MailUnavailable` when the mail server refuses."""
    await mail_link(
        mailing,
        "channel",
        address,
        path="/notifications/confirm",
        subject="Confirm Nichescope alerts to this address",
        body=_body,
        channel_id=channel.id,
    )


async def confirm_channel(mailing: Mailing, token: str) -> None:
    """Open a channel's confirmation link: alerts may go to the address from now on.

    Raises `BadRequest` (`invalid_token`) or `LinkGone` (410, `token_used`/`token_expired`)."""
    await open_link(mailing, token, "channel", ask_again=ASK_AGAIN)
