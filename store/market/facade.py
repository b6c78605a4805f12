"""The trio-facing facade of what is remembered per marketplace site: `store.market`.

The scrapers learn which wire profile an origin speaks (by probing after the marketplace
moved its API); remembering it here lets a restarted process, and every node of a cluster,
start with the profile that worked instead of probing again. A site's session (sealed by the
engine; the store never sees inside) is kept here too, so one browser launch or one pasted
session serves every node.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from .._db.rows import to_record
from .models import MarketProfile, MarketSessionRow
from .site_listings import sweep_unheld

if TYPE_CHECKING:
    from .._store import Store


def recall_profile(db: Session, origin: str) -> str | None:
    profile: str | None = db.scalar(
        select(MarketProfile.profile).where(MarketProfile.origin == origin)
    )
    return profile


def remember_profile(db: Session, origin: str, profile: str, at: datetime) -> None:
    """Upsert in one statement: two nodes remembering the same origin at once both succeed
    (the later write wins) instead of one failing on the primary key."""
    dialect = postgresql if db.get_bind().dialect.name == "postgresql" else sqlite
    insert = dialect.insert(MarketProfile).values(origin=origin, profile=profile, updated_at=at)
    db.execute(
        insert.on_conflict_do_update(
            index_elements=[MarketProfile.origin],
            set_={"profile": insert.excluded.profile, "updated_at": insert.excluded.updated_at},
        )
    )


@dataclass(frozen=True, slots=True)
class SealedSession:
    """A site's session as stored: sealed text, its source and expiry."""

    site: str
    source: str
    sealed: str
    expires_at: datetime | None
    updated_at: datetime


def sealed_session(db: Session, site: str) -> SealedSession | None:
    row = db.get(MarketSessionRow, site)
    return None if row is None else to_record(SealedSession, row)


def save_sealed_session(db: Session, session: SealedSession) -> None:
    """Upsert in one statement (two nodes saving at once: the later write wins)."""
    dialect = postgresql if db.get_bind().dialect.name == "postgresql" else sqlite
    values = {
        "site": session.site, "source": session.source, "sealed": session.sealed,
        "expires_at": session.expires_at, "updated_at": session.updated_at,
    }  # fmt: skip
    insert = dialect.insert(MarketSessionRow).values(**values)
    db.execute(
        insert.on_conflict_do_update(
            index_elements=[MarketSessionRow.site],
            set_={k: getattr(insert.excluded, k) for k in values if k != "site"},
        )
    )


class MarketStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def recall_profile(self, origin: str) -> str | None:
        """The profile last remembered for `origin` (e.g. ``https://www.vinted.fr``), or
        None. Raises `DatabaseUnavailable` like every store read."""
        return await self._store.unit(lambda db: recall_profile(db, origin))

    async def remember_profile(self, origin: str, profile: str) -> None:
        """Remember that `origin` speaks `profile` (insert or replace)."""
        now = self._store.clock()
        await self._store.unit(lambda db: remember_profile(db, origin, profile, now))

    async def session(self, site: str) -> SealedSession | None:
        """The sealed session stored for `site`, or None."""
        return await self._store.unit(lambda db: sealed_session(db, site))

    async def save_session(self, session: SealedSession) -> None:
        """Store `session` for its site (insert or replace)."""
        await self._store.unit(lambda db: save_sealed_session(db, session))

    async def sweep_unheld_versions(self, after: int) -> tuple[int, int] | None:
        """One step of the sweep of descriptions no monitor holds (`site_listings.
        sweep_unheld`): (the last id looked at, how many went), or None past the last."""
        return await self._store.unit(lambda db: sweep_unheld(db, after))
