"""Account repository: users, workspaces, sessions, password resets, access tokens.

Every function takes an open `AsyncSession`; the unit of work (and so the transaction)
belongs to the caller, `Store`.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from ._errors import AlreadyExists
from ._models import AccessToken, PasswordReset, Session, User, Workspace
from ._records import AccessTokenRecord, Credentials, SessionOwner, TokenOwner, UserRecord

SESSIONS_ENDED_CHANNEL = "nichescope_sessions_ended"


def _user_record(user: User) -> UserRecord:
    return UserRecord(
        id=user.id,
        email=user.email,
        name=user.name,
        workspace_id=user.workspace_id,
        created_at=user.created_at,
    )


def _token_record(token: AccessToken) -> AccessTokenRecord:
    return AccessTokenRecord(
        id=token.id,
        user_id=token.user_id,
        workspace_id=token.workspace_id,
        label=token.label,
        scopes=tuple(token.scopes.split()),
        created_at=token.created_at,
        last_used_at=token.last_used_at,
        revoked_at=token.revoked_at,
    )


async def create_user(
    db: AsyncSession,
    *,
    user_id: str,
    workspace_id: str,
    email: str,
    name: str | None,
    password_hash: str | None,
    now: datetime,
) -> UserRecord:
    """Create a user and the personal workspace it owns; `AlreadyExists` if the e-mail is taken."""
    db.add(Workspace(id=workspace_id, name=name or email, created_at=now))
    # Flushed first: without ORM relationships the unit of work does not order the inserts.
    await db.flush()
    user = User(
        id=user_id,
        email=email,
        name=name,
        password_hash=password_hash,
        workspace_id=workspace_id,
        created_at=now,
    )
    db.add(user)
    try:
        await db.flush()
    except IntegrityError as err:
        raise AlreadyExists("user", email) from err
    return _user_record(user)


async def get_credentials(db: AsyncSession, email: str) -> Credentials | None:
    user = await db.scalar(select(User).where(User.email == email))
    if user is None:
        return None
    return Credentials(user=_user_record(user), password_hash=user.password_hash)


async def get_user(db: AsyncSession, user_id: str) -> UserRecord | None:
    user = await db.get(User, user_id)
    return None if user is None else _user_record(user)


async def set_name(db: AsyncSession, user_id: str, name: str | None) -> UserRecord | None:
    user = await db.get(User, user_id)
    if user is None:
        return None
    user.name = name
    await db.flush()
    return _user_record(user)


async def set_password(db: AsyncSession, user_id: str, password_hash: str) -> None:
    await db.execute(update(User).where(User.id == user_id).values(password_hash=password_hash))


async def add_session(
    db: AsyncSession, *, token_hash: str, user_id: str, now: datetime, expires_at: datetime
) -> None:
    db.add(Session(token_hash=token_hash, user_id=user_id, created_at=now, expires_at=expires_at))


async def find_session(db: AsyncSession, token_hash: str, now: datetime) -> SessionOwner | None:
    row = (
        await db.execute(
            select(Session, User)
            .join(User, User.id == Session.user_id)
            .where(Session.token_hash == token_hash, Session.expires_at > now)
        )
    ).first()
    if row is None:
        return None
    session, user = row
    return SessionOwner(user=_user_record(user), expires_at=session.expires_at)


async def delete_session(db: AsyncSession, token_hash: str) -> int:
    result = await db.execute(delete(Session).where(Session.token_hash == token_hash))
    deleted = int(result.rowcount or 0)  # type: ignore[attr-defined]
    if deleted:
        await announce_sessions_ended(db, [token_hash])
    return deleted


async def delete_user_sessions(db: AsyncSession, user_id: str) -> list[str]:
    """Delete every session of a user; returns the deleted hashes so caches can drop them."""
    hashes = list(await db.scalars(select(Session.token_hash).where(Session.user_id == user_id)))
    await db.execute(delete(Session).where(Session.user_id == user_id))
    await announce_sessions_ended(db, hashes)
    return hashes


async def announce_sessions_ended(db: AsyncSession, token_hashes: list[str]) -> None:
    """On PostgreSQL, tell every node's session cache (`Store.listen_for_session_ends`). The
    NOTIFY goes out when this transaction commits, and not at all if it rolls back."""
    if db.get_bind().dialect.name != "postgresql":
        return  # SQLite is single-node: this node's cache is dropped by its caller
    for token_hash in token_hashes:
        await db.execute(select(func.pg_notify(SESSIONS_ENDED_CHANNEL, token_hash)))


async def delete_expired_sessions(db: AsyncSession, now: datetime) -> int:
    result = await db.execute(delete(Session).where(Session.expires_at <= now))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def add_password_reset(
    db: AsyncSession, *, token_hash: str, user_id: str, now: datetime, expires_at: datetime
) -> None:
    db.add(
        PasswordReset(token_hash=token_hash, user_id=user_id, created_at=now, expires_at=expires_at)
    )


async def consume_password_reset(db: AsyncSession, token_hash: str, now: datetime) -> str | None:
    """Mark a live reset token used and return its user id; None if unknown, used or expired.

    The conditional UPDATE makes two concurrent uses of one token yield exactly one success.
    """
    user_id = await live_password_reset_user(db, token_hash, now)
    if user_id is None:
        return None
    result = await db.execute(
        update(PasswordReset)
        .where(PasswordReset.token_hash == token_hash, PasswordReset.used_at.is_(None))
        .values(used_at=now)
    )
    if (result.rowcount or 0) != 1:  # type: ignore[attr-defined]
        return None
    return user_id


async def live_password_reset_user(db: AsyncSession, token_hash: str, now: datetime) -> str | None:
    """The user a live (unused, unexpired) reset token belongs to, without using it."""
    user_id = await db.scalar(
        select(PasswordReset.user_id).where(
            PasswordReset.token_hash == token_hash,
            PasswordReset.used_at.is_(None),
            PasswordReset.expires_at > now,
        )
    )
    return None if user_id is None else str(user_id)


async def revoke_user_tokens(db: AsyncSession, user_id: str, now: datetime) -> int:
    """Revoke every live access token of the user; how many were live."""
    result = await db.execute(
        update(AccessToken)
        .where(AccessToken.user_id == user_id, AccessToken.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def add_access_token(
    db: AsyncSession,
    *,
    token_id: str,
    user_id: str,
    workspace_id: str,
    label: str,
    scopes: tuple[str, ...],
    token_hash: str,
    now: datetime,
) -> AccessTokenRecord:
    token = AccessToken(
        id=token_id,
        user_id=user_id,
        workspace_id=workspace_id,
        label=label,
        scopes=" ".join(scopes),
        token_hash=token_hash,
        created_at=now,
    )
    db.add(token)
    await db.flush()
    return _token_record(token)


async def list_access_tokens(db: AsyncSession, user_id: str) -> list[AccessTokenRecord]:
    rows = await db.scalars(
        select(AccessToken)
        .where(AccessToken.user_id == user_id)
        .order_by(AccessToken.created_at.desc(), AccessToken.id)
    )
    return [_token_record(token) for token in rows]


async def revoke_access_token(
    db: AsyncSession, *, user_id: str, token_id: str, now: datetime
) -> AccessTokenRecord | None:
    """Revoke a token of this user (idempotent); None if the user has no such token."""
    token = await db.scalar(
        select(AccessToken).where(AccessToken.id == token_id, AccessToken.user_id == user_id)
    )
    if token is None:
        return None
    if token.revoked_at is None:
        token.revoked_at = now
        await db.flush()
    return _token_record(token)


async def use_access_token(db: AsyncSession, token_hash: str, now: datetime) -> TokenOwner | None:
    """Find a live token by hash and stamp `last_used_at`; None if unknown or revoked."""
    row = (
        await db.execute(
            select(AccessToken, User)
            .join(User, User.id == AccessToken.user_id)
            .where(AccessToken.token_hash == token_hash, AccessToken.revoked_at.is_(None))
        )
    ).first()
    if row is None:
        return None
    token, user = row
    token.last_used_at = now
    await db.flush()
    return TokenOwner(token=_token_record(token), user=_user_record(user))
