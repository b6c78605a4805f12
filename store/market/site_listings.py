"""A site's listings described once (`site_listings`), however many monitors see them.

Every poll that sees a listing offers its sighting (`describe`); the newest sighting by the
market's clock wins, field by field where the sighting says something (a feed that omits the
seller's login does not erase it), and an older one (a slower poll committed later) changes
nothing. One statement per chunk, `INSERT ... ON CONFLICT DO UPDATE ... WHERE`, so that two
monitors' polls of the same listing, in concurrent transactions, neither fail nor lose the
newer description. Rows are written in item-id order: two polls that overlap take their row
locks in the same order on PostgreSQL and so cannot deadlock on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from ..monitors.records import ObservedListing
from .models import SiteListing

CHUNK = 500  # rows per statement: SQLite caps bound parameters per statement
# What a sighting says of the listing itself (the rest is the monitor's: `MonitorListing`).
DESCRIBED = (
    "title", "brand", "size", "condition", "condition_raw", "currency", "seller_id",
    "seller_login", "seller_business", "url", "photo_url", "listed_at",
)  # fmt: skip


def describe(db: Session, site: str, at: datetime, seen: Iterable[ObservedListing]) -> None:
    """Offer the sightings `seen` at `at` (the poll's stamp) as the descriptions of their
    listings on `site`, in the caller's transaction."""
    latest = {sighting.item_id: sighting for sighting in seen}  # one row per statement
    rows = [
        {"site": site, "item_id": item_id, "described_at": at}
        | {name: getattr(latest[item_id], name) for name in DESCRIBED}
        for item_id in sorted(latest)
    ]
    dialect: Any = postgresql if db.get_bind().dialect.name == "postgresql" else sqlite
    table = SiteListing.__table__
    for start in range(0, len(rows), CHUNK):
        insert = dialect.insert(SiteListing).values(rows[start : start + CHUNK])
        fresher = {
            name: func.coalesce(getattr(insert.excluded, name), table.c[name]) for name in DESCRIBED
        }
        db.execute(
            insert.on_conflict_do_update(
                index_elements=[SiteListing.site, SiteListing.item_id],
                set_={"described_at": insert.excluded.described_at, **fresher},
                where=SiteListing.described_at <= insert.excluded.described_at,
            )
        )


def descriptions(db: Session, site: str, item_ids: Sequence[int]) -> dict[int, SiteListing]:
    """The stored descriptions of `item_ids` on `site`, by item id."""
    found: dict[int, SiteListing] = {}
    ids = sorted(set(item_ids))
    for start in range(0, len(ids), CHUNK):
        rows = db.scalars(
            select(SiteListing).where(
                SiteListing.site == site, SiteListing.item_id.in_(ids[start : start + CHUNK])
            )
        )
        found.update((row.item_id, row) for row in rows)
    return found
