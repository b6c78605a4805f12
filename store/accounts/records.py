"""Plain, frozen records that leave the store: callers never see ORM objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .._db.rows import new_id


@dataclass(frozen=True, slots=True)
class NewUser:
    """What creating a user takes (`Store.create_user`): the user and the personal workspace
    it owns (named after the user), under fresh ids unless given."""

    email: str
    name: str | None
    password_hash: str | None
    user_id: str = field(default_factory=lambda: new_id("usr"))
    workspace_id: str = field(default_factory=lambda: new_id("ws"))
    # Set only where the address is proven as the account is made (the demo's own address,
    # an identity provider's verified e-mail); a registration proves nothing.
    email_verified_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class NewAccessToken:
    """What minting an access token takes (`Store.add_access_token`): only the keyed digest
    of the token is kept."""

    token_id: str
    user_id: str
    workspace_id: str
    label: str
    scopes: tuple[str, ...]
    token_hash: str


@dataclass(frozen=True, slots=True)
class UserRecord:
    id: str
    email: str
    name: str | None
    workspace_id: str
    created_at: datetime
    # None until the owner proved the address (see `User.email_verified_at`).
    email_verified_at: datetime | None = None

    @property
    def email_verified(self) -> bool:
        return self.email_verified_at is not None


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
