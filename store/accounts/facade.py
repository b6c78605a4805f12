"""The accounts' methods of `Store` (`store.create_user`, ...): users, sessions, password
resets and access tokens, each one unit of work over `store/accounts/queries.py`.

Unlike the other resources' facades (`store.monitors`, ...), these sit on the Store itself:
`Store` derives from `Accounts`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy.orm import Session

from .._db.listen import listen
from .._db.unit import Unit
from . import expiry
from . import queries as accounts
from .confirmations import mark_email_proven
from .records import (
    AccessTokenRecord,
    Credentials,
    NewAccessToken,
    NewUser,
    SessionOwner,
    TokenOwner,
    UserRecord,
)


class Accounts(Unit):
    """Users, sessions, password resets and access tokens, on the Store itself."""

    async def create_user(self, new: NewUser) -> UserRecord:
        now = self.clock()
        return await self.unit(lambda db: accounts.create_user(db, new, now))

    async def get_credentials(self, email: str) -> Credentials | None:
        return await self.unit(lambda db: accounts.get_credentials(db, email))

    async def get_user(self, user_id: str) -> UserRecord | None:
        return await self.unit(lambda db: accounts.get_user(db, user_id))

    async def set_user_name(self, user_id: str, name: str | None) -> UserRecord | None:
        return await self.unit(lambda db: accounts.set_name(db, user_id, name))

    async def add_session(self, *, token_hash: str, user_id: str, expires_at: datetime) -> None:
        now = self.clock()
        await self.unit(
            lambda db: accounts.add_session(
                db, token_hash=token_hash, user_id=user_id, now=now, expires_at=expires_at
            )
        )

    async def find_session(self, token_hash: str) -> SessionOwner | None:
        now = self.clock()
        return await self.unit(lambda db: accounts.find_session(db, token_hash, now))

    async def delete_session(self, token_hash: str) -> int:
        return await self.unit(lambda db: accounts.delete_session(db, token_hash))

    async def listen_for_session_ends(self, on_end: Callable[[str | None], None]) -> None:
        """PostgreSQL only: `on_end(token_hash)` for every session any node ends (logout,
        password reset), `on_end(None)` after (re)connecting, for what may have been missed;
        until cancelled (see `store/_db/listen.py`)."""
        await listen(self.url, accounts.SESSIONS_ENDED_CHANNEL, on_end)

    async def delete_expired(self) -> dict[str, int]:
        """Expired sessions, and links long expired (`store/accounts/expiry.py`): how many
        of each kind were deleted."""
        now = self.clock()
        return await self.unit(lambda db: expiry.delete_expired(db, now))

    async def add_password_reset(
        self, *, token_hash: str, user_id: str, expires_at: datetime
    ) -> None:
        now = self.clock()
        await self.unit(
            lambda db: accounts.add_password_reset(
                db, token_hash=token_hash, user_id=user_id, now=now, expires_at=expires_at
            )
        )

    async def reset_password(
        self, token_hash: str, password_hash: str, *, revoke_tokens: bool
    ) -> list[str] | None:
        """Use a reset token, set the password, end every session of the user and, with
        `revoke_tokens`, revoke every access token of the user, atomically.

        Returns the ended sessions' and revoked tokens' hashes (for cache invalidation), or
        None if the token is unknown, used or expired, in which case nothing changes.
        """
        now = self.clock()

        def work(db: Session) -> list[str] | None:
            user_id = accounts.consume_password_reset(db, token_hash, now)
            if user_id is None:
                return None
            accounts.set_password(db, user_id, password_hash)
            # The link was mailed to the account's address: using it proves that address.
            mark_email_proven(db, user_id, None, now)
            revoked = accounts.revoke_user_tokens(db, user_id, now) if revoke_tokens else []
            return accounts.delete_user_sessions(db, user_id) + revoked

        return await self.unit(work)

    async def tokens_at_reset(self, token_hash: str) -> list[AccessTokenRecord] | None:
        """The live access tokens of the user a live reset token belongs to (what the reset
        page offers to revoke); None if the reset token is unknown, used or expired."""
        now = self.clock()

        def work(db: Session) -> list[AccessTokenRecord] | None:
            user_id = accounts.live_password_reset_user(db, token_hash, now)
            if user_id is None:
                return None
            tokens = accounts.list_access_tokens(db, user_id)
            return [token for token in tokens if token.revoked_at is None]

        return await self.unit(work)

    async def add_access_token(self, new: NewAccessToken) -> AccessTokenRecord:
        now = self.clock()
        return await self.unit(lambda db: accounts.add_access_token(db, new, now))

    async def list_access_tokens(self, user_id: str) -> list[AccessTokenRecord]:
        return await self.unit(lambda db: accounts.list_access_tokens(db, user_id))

    async def revoke_access_token(self, *, user_id: str, token_id: str) -> AccessTokenRecord | None:
        now = self.clock()
        return await self.unit(
            lambda db: accounts.revoke_access_token(db, user_id=user_id, token_id=token_id, now=now)
        )

    async def use_access_token(self, token_hash: str) -> TokenOwner | None:
        now = self.clock()
        return await self.unit(lambda db: accounts.use_access_token(db, token_hash, now))
