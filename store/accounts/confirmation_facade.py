"""The trio-facing facade of proven addresses: `store.confirmations`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import confirmations as repo
from .confirmations import Confirmed, IdentityClaim, NewConfirmation, Purpose
from .records import NewUser

if TYPE_CHECKING:
    from .._store import Store


class ConfirmationStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def add(self, new: NewConfirmation) -> None:
        """Keep a link just made (the subject's earlier unused links die)."""
        now = self._store.clock()
        await self._store.unit(lambda db: repo.add_confirmation(db, new, now))

    async def use(self, token_hash: str, purpose: Purpose) -> Confirmed:
        """Spend a link and prove its address, in one transaction."""
        now = self._store.clock()
        return await self._store.unit(
            lambda db: repo.use_confirmation(db, token_hash, purpose, now)
        )

    async def claim_for_identity(self, new: NewUser) -> IdentityClaim:
        """The account an identity provider's verified address opens (see
        `_confirmations.claim_for_identity`); `AlreadyExists` when a concurrent sign-in
        created it first (ask again)."""
        now = self._store.clock()
        return await self._store.unit(lambda db: repo.claim_for_identity(db, new, now))
