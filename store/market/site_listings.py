"""A site's listings described once (`site_listings`), however many monitors see them.

Every poll that sees a listing offers its sighting (`describe`); the newest sighting by the
market's clock wins, field by field where the sighting says something (a feed that omits the
seller's login does not erase it), and an older one (a slower poll committed later) changes
nothing. A sighting that says nothing new writes nothing (`described_at` is when the
description last changed). Writes are `INSERT ... ON CONFLICT DO UPDATE ... WHERE`, so
that two monitors' polls of one listing, in concurrent transactions, neither fail nor lose
the newer description; rows go in item-id order, so two polls that overlap take their row
locks in the same order on PostgreSQL (no deadlock).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, select
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


# A description as read (a Core row of `site_listings`: attributes by column name).
Description = Row[Any]


def describe(db: Session, site: str, at: datetime, seen: Iterable[ObservedListing]) -> None:
    """Offer the sightings `seen` at `at` (the poll's stamp) as the descriptions of their
    listings on `site`, in the caller's transaction. Only what is new is written: a listing
    not described yet, or one this sighting says something else of (most polls see most
    listings unchanged, and a read by key costs far less than a write)."""
    latest = {sighting.item_id: sighting for sighting in seen}  # one row per statement
    stored = descriptions(db, site, list(latest))
    rows = [
        {"site": site, "item_id": item_id, "described_at": at}
        | {name: getattr(latest[item_id], name) for name in DESCRIBED}
        for item_id in sorted(latest)
        if _news(stored.get(item_id), latest[item_id], at)
    ]
    if rows:  # one statement, compiled once and cached, run for every row
        db.execute(_upsert(db.get_bind().dialect.name), rows)


def _upsert(dialect_name: str) -> Any:
    dialect: Any = postgresql if dialect_name == "postgresql" else sqlite
    table = SiteListing.__table__
    insert = dialect.insert(table)
    fresher = {
        name: func.coalesce(getattr(insert.excluded, name), table.c[name]) for name in DESCRIBED
    }
    return insert.on_conflict_do_update(
        index_elements=[table.c.site, table.c.item_id],
        set_={"described_at": insert.excluded.described_at, **fresher},
        where=table.c.described_at <= insert.excluded.described_at,
    )


def _news(stored: Description | None, sighting: ObservedListing, at: datetime) -> bool:
    """Whether `sighting` at `at` changes the stored description."""
    if stored is None:
        return True
    if stored.described_at > at:  # a newer sighting is in already
        return False
    return any(
        (value := getattr(sighting, name)) is not None and value != getattr(stored, name)
        for name in DESCRIBED
    )


def descriptions(db: Session, site: str, item_ids: Sequence[int]) -> dict[int, Description]:
    """The stored descriptions of `item_ids` on `site`, by item id (Core rows: a poll reads
    every listing it sees, and ORM entities cost several times as much to build)."""
    table = SiteListing.__table__
    found: dict[int, Description] = {}
    ids = sorted(set(item_ids))
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        rows = db.execute(select(table).where(table.c.site == site, table.c.item_id.in_(chunk)))
        found.update((int(row.item_id), row) for row in rows)
    return found
