"""Account repository: users, workspaces, sessions, password resets, access tokens.

Every function takes an open `Session`; the unit of work (and so the transaction)
belongs to the caller, `Store`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as Db

from .._db.errors import AlreadyExists
from .._db.rows import new_row, to_record
from .models import AccessToken, PasswordReset, Session, User, Workspace
from .records import (
    AccessTokenRecord,
    Credentials,
    NewAccessToken,
    NewUser,
    SessionOwner,
    TokenOwner,
    UserRecord,
)

SESSIONS_ENDED_CHANNEL = "nichescope_sessions_ended"  # also names revoked access tokens
# How stale an access token's `last_used_at` may be: it is written at most this often.
LAST_USED_RESOLUTION = timedelta(minutes=1)
WORKSPACE_NAME_LENGTH = 200  # `Workspace.name`'s column


def _user_record(user: User) -> UserRecord:
    return to_record(UserRecord, user)


def _token_record(token: AccessToken) -> AccessTokenRecord:
    # Scopes are stored as one space-separated string.
    return to_record(AccessTokenRecord, token, scopes=tuple(token.scopes.split()))


def create_user(db: Db, new: NewUser, now: datetime) -> UserRecord:
    """Create a user and the personal workspace it owns; `AlreadyExists` if the e-mail is taken."""
    # Named by the address when its owner gave no name: cut to the column (an address may be
    # 254 characters long, a workspace's name 200; Schemathesis found the 500).
    name = (new.name or new.email)[:WORKSPACE_NAME_LENGTH]
    db.add(Workspace(id=new.workspace_id, name=name, created_at=now))
    # Flushed first: without ORM relationships the unit of work does not order the inserts.
    db.flush()
    user = new_row(User, new, "user_id", created_at=now)
    db.add(user)
    try:
        db.flush()
    except IntegrityError as err:
        raise AlreadyExists("user", new.email) from err
    return _user_record(user)


def get_credentials(db: Db, email: str) -> Credentials | None:
    user = db.scalar(select(User).where(User.email == email))
    if user is None:
        return None
    return Credentials(user=_user_record(user), password_hash=user.password_hash)


def get_user(db: Db, user_id: str) -> UserRecord | None:
    user = db.get(User, user_id)
    return None if user is None else _user_record(user)


def set_name(db: Db, user_id: str, name: str | None) -> UserRecord | None:
    user = db.get(User, user_id)
    if user is None:
        return None
    user.name = name
    db.flush()
    return _user_record(user)


def set_password(db: Db, user_id: str, password_hash: str) -> None:
    db.execute(update(User).where(User.id == user_id).values(password_hash=password_hash))


def add_session(
    db: Db, *, token_hash: str, user_id: str, now: datetime, expires_at: datetime
) -> None:
    db.add(Session(token_hash=token_hash, user_id=user_id, created_at=now, expires_at=expires_at))


def find_session(db: Db, token_hash: str, now: datetime) -> SessionOwner | None:
    row = (
        db.execute(
            select(Session, User)
            .join(User, User.id == Session.user_id)
            .where(Session.token_hash == token_hash, Session.expires_at > now)
        )
    ).first()
    if row is None:
        return None
    session, user = row
    return SessionOwner(user=_user_record(user), expires_at=session.expires_at)


def delete_session(db: Db, token_hash: str) -> int:
    result = db.execute(delete(Session).where(Session.token_hash == token_hash))
    deleted = int(result.rowcount or 0)  # type: ignore[attr-defined]
    if deleted:
        announce_sessions_ended(db, [token_hash])
    return deleted


def delete_user_sessions(db: Db, user_id: str) -> list[str]:
    """Delete every session of a user; returns the deleted hashes so caches can drop them."""
    hashes = list(db.scalars(select(Session.token_hash).where(Session.user_id == user_id)))
    db.execute(delete(Session).where(Session.user_id == user_id))
    announce_sessions_ended(db, hashes)
    return hashes


def announce_sessions_ended(db: Db, token_hashes: list[str]) -> None:
    """On PostgreSQL, tell every node's session cache (`Store.listen_for_session_ends`). The
    NOTIFY goes out when this transaction commits, and not at all if it rolls back."""
    if db.get_bind().dialect.name != "postgresql":
        return  # SQLite is single-node: this node's cache is dropped by its caller
    for token_hash in token_hashes:
        db.execute(select(func.pg_notify(SESSIONS_ENDED_CHANNEL, token_hash)))


def add_password_reset(
    db: Db, *, token_hash: str, user_id: str, now: datetime, expires_at: datetime
) -> None:
    db.add(
        PasswordReset(token_hash=token_hash, user_id=user_id, created_at=now, expires_at=expires_at)
    )


def consume_password_reset(db: Db, token_hash: str, now: datetime) -> str | None:
    """Mark a live reset token used and return its user id; None if unknown, used or expired.

    The conditional UPDATE makes two concurrent uses of one token yield exactly one success.
    """
    user_id = live_password_reset_user(db, token_hash, now)
    if user_id is None:
        return None
    # The user before its link (PostgreSQL), as an identity's claim of the address takes
    # them (it deletes the user's links): the other way round the two deadlocked. A link
    # the claim deleted meanwhile is then not found below.
    db.execute(select(User.id).where(User.id == user_id).with_for_update(key_share=True))
    result = db.execute(
        update(PasswordReset)
        .where(PasswordReset.token_hash == token_hash, PasswordReset.used_at.is_(None))
        .values(used_at=now)
    )
    if (result.rowcount or 0) != 1:  # type: ignore[attr-defined]
        return None
    return user_id


def live_password_reset_user(db: Db, token_hash: str, now: datetime) -> str | None:
    """The user a live (unused, unexpired) reset token belongs to, without using it."""
    user_id = db.scalar(
        select(PasswordReset.user_id).where(
            PasswordReset.token_hash == token_hash,
            PasswordReset.used_at.is_(None),
            PasswordReset.expires_at > now,
        )
    )
    return None if user_id is None else str(user_id)


def revoke_user_tokens(db: Db, user_id: str, now: datetime) -> list[str]:
    """Revoke every live access token of the user; the revoked tokens' hashes (announced,
    so that caches drop them)."""
    live = (AccessToken.user_id == user_id, AccessToken.revoked_at.is_(None))
    hashes = list(db.scalars(select(AccessToken.token_hash).where(*live)))
    db.execute(update(AccessToken).where(*live).values(revoked_at=now))
    announce_sessions_ended(db, hashes)
    return hashes


def add_access_token(db: Db, new: NewAccessToken, now: datetime) -> AccessTokenRecord:
    # Scopes are stored as one space-separated string.
    token = new_row(AccessToken, new, "token_id", scopes=" ".join(new.scopes), created_at=now)
    db.add(token)
    db.flush()
    return _token_record(token)


def list_access_tokens(db: Db, user_id: str) -> list[AccessTokenRecord]:
    rows = db.scalars(
        select(AccessToken)
        .where(AccessToken.user_id == user_id)
        .order_by(AccessToken.created_at.desc(), AccessToken.id)
    )
    return [_token_record(token) for token in rows]


def revoke_access_token(
    db: Db, *, user_id: str, token_id: str, now: datetime
) -> AccessTokenRecord | None:
    """Revoke a token of this user (idempotent); None if the user has no such token."""
    token = db.scalar(
        select(AccessToken).where(AccessToken.id == token_id, AccessToken.user_id == user_id)
    )
    if token is None:
        return None
    if token.revoked_at is None:
        token.revoked_at = now
        db.flush()
        announce_sessions_ended(db, [token.token_hash])
    return _token_record(token)


def use_access_token(db: Db, token_hash: str, now: datetime) -> TokenOwner | None:
    """Find a live token by hash and stamp `last_used_at` (unless stamped within the last
    `LAST_USED_RESOLUTION`); None if unknown or revoked."""
    row = (
        db.execute(
            select(AccessToken, User)
            .join(User, User.id == AccessToken.user_id)
            .where(AccessToken.token_hash == token_hash, AccessToken.revoked_at.is_(None))
        )
    ).first()
    if row is None:
        return None
    token, user = row
    # At most once a minute: a busy agent's every call would otherwise be a write.
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        token.last_used_at = now
        db.flush()
    return TokenOwner(token=_token_record(token), user=_user_record(user))
