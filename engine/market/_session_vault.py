"""Marketplace sessions shared through the database, sealed with the service's secret key.

One browser launch serves every node of a cluster, and an operator's pasted session reaches
them all: the session's cookies and User-Agent are sealed (Fernet, a key of their own derived
from the secret key) and stored per site. A box that does not open (the secret key changed,
the row was tampered with) is no session: the next acquisition makes a new one.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from scrapers import MarketSession, SessionRefused
from store import SealedSession, Store

from ..notifications import BadSecretBox, SecretBox

log = logging.getLogger(__name__)

SESSION_PURPOSE = b"nichescope marketplace sessions"


class StoreSessionVault:
    """`scrapers.SessionVault` over `store.market` (see the module doc)."""

    def __init__(self, store: Store, secret_key: str) -> None:
        self._store = store
        self._box = SecretBox(secret_key, purpose=SESSION_PURPOSE)

    async def load(self, site: str) -> MarketSession | None:
        """The stored session of `site`, None when there is none or it does not open.
        Raises `DatabaseUnavailable` like every store read."""
        row = await self._store.market.session(site)
        if row is None:
            return None
        try:
            return MarketSession.from_json(self._box.open(row.sealed))
        except (BadSecretBox, SessionRefused) as err:
            log.warning("the stored market session of %s does not open: %s", site, err)
            return None

    async def save(self, session: MarketSession) -> None:
        expires = session.expires_at
        await self._store.market.save_session(
            SealedSession(
                site=session.site,
                source=session.source,
                sealed=self._box.seal(session.to_json()),
                expires_at=None if expires is None else datetime.fromtimestamp(expires, UTC),
                updated_at=self._store.clock(),
            )
        )
