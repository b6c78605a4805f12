"""Proven e-mail addresses: confirmation links, and what proving an address changes.

An address counts (to link an identity provider's sign-in to an account, to make an operator,
to receive alerts) only once whoever reads its mail has shown it: by opening a link mailed to
it (the links of this module, a password reset link, a trial link sent to the account's own
address), or by signing in through an identity provider that verified it.

Every function takes an open `Session`; the unit of work belongs to the caller
(`ConfirmationStore`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session as Db

from .._db.rows import record_fields, to_record
from ..billing.models import TrialToken
from ..notify.models import NotificationChannel
from .confirmation_models import EmailConfirmation
from .models import PasswordReset, User
from .queries import create_user, delete_user_sessions, revoke_user_tokens
from .records import NewUser, UserRecord

ConfirmationPurpose = Literal["account", "channel"]
Purpose = ConfirmationPurpose
ConfirmOutcome = Literal["confirmed", "unknown_token", "used_token", "expired_token"]

# What a channel says after an identity provider's sign-in took its account over.
TAKEN_OVER = (
    "Turned off when this account's address was proven through your identity provider: the "
    "channel was made before anyone had proven it. Check where it sends, then turn it on."
)


@dataclass(frozen=True, slots=True)
class NewConfirmation:
    """A link just mailed to `email`: for an account (`user_id`) or a channel (`channel_id`).
    Only the keyed digest of its secret is kept."""

    token_hash: str
    purpose: Purpose
    email: str
    expires_at: datetime
    user_id: str | None = None
    channel_id: str | None = None


@dataclass(frozen=True, slots=True)
class Confirmed:
    """What opening a link did: `confirmed` (the subject's ids are set), or why it did nothing."""

    outcome: ConfirmOutcome
    user_id: str | None = None
    channel_id: str | None = None


@dataclass(frozen=True, slots=True)
class IdentityClaim:
    """The account an identity provider's sign-in opens. `taken_over`: it was an account
    nobody had proven, and everything its unproven holder had was ended; `ended` holds the
    digests of the sessions ended and tokens revoked then (for the credential caches)."""

    user: UserRecord
    taken_over: bool
    ended: tuple[str, ...] = ()


def add_confirmation(db: Db, new: NewConfirmation, now: datetime) -> None:
    """Store a link; the subject's earlier unused links die (only the latest e-mail works, so
    an old one found in a mailbox later proves nothing)."""
    same = (
        EmailConfirmation.user_id == new.user_id
        if new.purpose == "account"
        else EmailConfirmation.channel_id == new.channel_id
    )
    db.execute(
        delete(EmailConfirmation).where(
            EmailConfirmation.purpose == new.purpose, same, EmailConfirmation.used_at.is_(None)
        )
    )
    db.add(EmailConfirmation(**record_fields(new), created_at=now))


def use_confirmation(db: Db, token_hash: str, purpose: Purpose, now: datetime) -> Confirmed:
    """Spend a link of `purpose` and prove its address for its subject.

    The conditional UPDATE makes two concurrent uses of one link yield one success; a link of
    the other purpose is unknown here (a channel's link never proves an account).

    A channel's link takes its channel first (PostgreSQL), as the channel's deletion does
    before its links go with it: spending the link first, the two deadlocked."""
    if purpose == "channel":
        _hold_channel_of(db, token_hash)
    spent = db.execute(
        update(EmailConfirmation)
        .where(
            EmailConfirmation.token_hash == token_hash,
            EmailConfirmation.purpose == purpose,
            EmailConfirmation.used_at.is_(None),
            EmailConfirmation.expires_at > now,
        )
        .values(used_at=now)
    )
    row = db.get(EmailConfirmation, token_hash)
    if row is None or row.purpose != purpose:
        return Confirmed("unknown_token")
    if not spent.rowcount:  # type: ignore[attr-defined]
        return Confirmed("used_token" if row.used_at is not None else "expired_token")
    if row.user_id is not None and purpose == "account":
        mark_email_proven(db, row.user_id, row.email, now)
    if row.channel_id is not None and purpose == "channel":
        db.execute(
            update(NotificationChannel)
            .where(
                NotificationChannel.id == row.channel_id,
                NotificationChannel.confirmed_at.is_(None),
            )
            .values(confirmed_at=now)
        )
    return Confirmed("confirmed", user_id=row.user_id, channel_id=row.channel_id)


def _hold_channel_of(db: Db, token_hash: str) -> None:
    channel_id = db.scalar(
        select(EmailConfirmation.channel_id).where(EmailConfirmation.token_hash == token_hash)
    )
    if channel_id is not None:
        held = select(NotificationChannel.id).where(NotificationChannel.id == channel_id)
        db.execute(held.with_for_update(key_share=True))


def mark_email_proven(db: Db, user_id: str, email: str | None, now: datetime) -> bool:
    """Record that the owner of `user_id` proved its address; with `email`, only if that is
    still the account's address (a link proves the address it was mailed to, nothing else).
    False when nothing changed (already proven, or another address)."""
    conditions = [User.id == user_id, User.email_verified_at.is_(None)]
    if email is not None:
        conditions.append(User.email == email)
    result = db.execute(update(User).where(*conditions).values(email_verified_at=now))
    return bool(result.rowcount)  # type: ignore[attr-defined]


def claim_for_identity(db: Db, new: NewUser, now: datetime) -> IdentityClaim:
    """The account for an identity provider's sign-in with the verified address `new.email`:

    - no account has the address: `new`, created proven (`AlreadyExists` if a concurrent
      request created it first: the caller asks again);
    - an account whose owner proved the address has it: that account;
    - an account nobody proved has it (anyone can register any address): the identity takes
      the address over. The account keeps its id, workspace and data, but loses everything
      that let its unproven holder in or out: its password (sign-in is through the provider,
      or a password set by a reset link, which goes to the proven address), its sessions, its
      access tokens, its pending reset, confirmation and trial links, and its alert channels
      are turned off with `TAKEN_OVER` as the reason (they may send to the holder).
    """
    query = select(User).where(User.email == new.email)
    if db.get_bind().dialect.name == "postgresql":
        query = query.with_for_update()  # one claim at a time per address
    user = db.scalar(query)
    if user is None:
        made = create_user(db, dataclasses.replace(new, email_verified_at=now), now)
        return IdentityClaim(made, taken_over=False)
    if user.email_verified_at is not None:
        return IdentityClaim(to_record(UserRecord, user), taken_over=False)
    user.password_hash = None
    user.email_verified_at = now
    user.name = new.name or user.name
    db.flush()
    ended = delete_user_sessions(db, user.id) + revoke_user_tokens(db, user.id, now)
    db.execute(delete(PasswordReset).where(PasswordReset.user_id == user.id))
    db.execute(delete(EmailConfirmation).where(EmailConfirmation.user_id == user.id))
    db.execute(
        delete(TrialToken).where(TrialToken.user_id == user.id, TrialToken.used_at.is_(None))
    )
    db.execute(
        update(NotificationChannel)
        .where(
            NotificationChannel.workspace_id == user.workspace_id,
            NotificationChannel.enabled.is_(True),
        )
        .values(enabled=False, disabled_reason=TAKEN_OVER)
    )
    return IdentityClaim(to_record(UserRecord, user), taken_over=True, ended=tuple(ended))
