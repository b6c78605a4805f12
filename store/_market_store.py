"""The trio-facing facade of the market profile memory: `store.market`.

The scrapers learn which wire profile an origin speaks (by probing after the marketplace
moved its API); remembering it here lets a restarted process, and every node of a cluster,
start with the profile that worked instead of probing again.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from ._market_models import MarketProfile

if TYPE_CHECKING:
    from ._store import Store


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
