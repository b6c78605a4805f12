"""Plain, frozen records that leave the store: callers never see ORM objects."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class UserRecord:
    id: str
    email: str
    name: str | None
    workspace_id: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Credentials:
    """A user with the password hash, for sign-in only; never serialised to a client."""

    user: UserRecord
    password_hash: str | None


@dataclass(frozen=True, slots=True)
class AccessTokenRecord:
    id: str
    user_id: str
    workspace_id: str
    label: str
    scopes: tuple[str, ...]
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True, slots=True)
class TokenOwner:
    """Who a presented access token speaks for."""

    token: AccessTokenRecord
    user: UserRecord


@dataclass(frozen=True, slots=True)
class SessionOwner:
    user: UserRecord
    expires_at: datetime
