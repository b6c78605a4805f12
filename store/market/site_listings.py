"""A site's listings described once (`site_listings`), however many monitors see them.

A description is versioned, not overwritten: when a poll sees a listing, its description is
the one the monitor saw last with what the sighting says laid over it (a feed that omits the
seller's login does not erase it), and that description is stored once per (site, item id,
content) and shared by every monitor that saw the listing so. A monitor therefore shows what
it saw itself, exactly as a lone monitor of its search would, and nothing of what another
workspace's monitor saw since (which would betray that someone else watches the listing);
yet a listing that never changes, the common case, is stored once whoever watches it.

Versions are keyed by a digest of their content (`digest`, unique with the site and item
id). A poll reads the versions its monitor holds, by id; writes a version only when one is
new, `INSERT ... ON CONFLICT DO NOTHING` so that two monitors' polls making the same version
in concurrent transactions both succeed (in item-id order: on PostgreSQL they take their
locks in the same order); and reads back the ids.

A version no monitor holds any longer (its monitors deleted, or moved on to a newer one) is
dropped (`drop_unheld`): nothing else reads it. On PostgreSQL a poll may be taking such a
version up at that moment (its insert found it there), so the poll reads its versions back
with a `FOR KEY SHARE` lock, which a drop skips (`SKIP LOCKED`), and inserts again a version
dropped between its insert and its read; a drop the foreign key refuses (the poll committed
in between) is undone in a savepoint of its own and tried again. SQLite has one writer: no
race. A version may still be left behind, harmlessly: skipped for a poll that then failed,
or held by two monitors deleted at the same moment (each transaction sees the other's hold).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Table, column, delete, exists, select, table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from .._db.rows import rows_changed
from ..monitors.records import ObservedListing
from .models import SiteListing

# Ids per IN (...): SQLite caps bound parameters per statement (999 before 3.32), and a
# lookup of versions binds two lists.
CHUNK = 400
# What a sighting says of the listing itself (the rest is the monitor's: `MonitorListing`).
DESCRIBED = (
    "title", "brand", "size", "condition", "condition_raw", "currency", "seller_id",
    "seller_login", "seller_business", "url", "photo_url", "listed_at",
)  # fmt: skip
# A description: each of `DESCRIBED` by name.
Description = Mapping[str, Any]
_TABLE = cast(Table, SiteListing.__table__)
# Who holds a version: `monitors.models.MonitorListing`, named here without importing it
# (the monitors' package imports this one).
_HOLDERS = table("monitor_listings", column("description_id"))
# Reads of a poll's versions that find one dropped meanwhile (PostgreSQL) before giving up.
READ_BACK_ATTEMPTS = 3
# Drops of a chunk refused because a poll took a version up meanwhile, before leaving it.
DROP_ATTEMPTS = 3
log = logging.getLogger(__name__)


def digest(description: Description) -> str:
    """What tells two descriptions apart: 32 hex digits of their canonical content."""
    parts = []
    for name in DESCRIBED:
        value = description[name]
        if isinstance(value, datetime):
            value = value.astimezone(UTC).isoformat()
        parts.append(f"{name}={value!r}")
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=16).hexdigest()


def laid_over(before: Description | None, sighting: ObservedListing) -> dict[str, Any]:
    """The description after `sighting`: what it says, and for what it leaves out (None),
    what the monitor saw before."""
    return {
        name: value if (value := getattr(sighting, name)) is not None else field_of(before, name)
        for name in DESCRIBED
    }


def field_of(description: Description | None, name: str) -> Any:
    """One field of a description, None for none."""
    return None if description is None else description[name]


@dataclass(frozen=True, slots=True)
class Described:
    """What one poll's sightings make of its listings' descriptions."""

    now: dict[int, Description]  # every listing asked about: as the monitor now shows it
    # The listings whose description changed (or was first seen): the id of the version it
    # is now, new or already stored by another monitor.
    ids: dict[int, int]


def describe(
    db: Session, site: str, held: Mapping[int, int], seen: Mapping[int, ObservedListing]
) -> Described:
    """The descriptions of the listings a monitor holds (`held`: item id -> the version it
    saw last) and of those it sees now (`seen`: item id -> sighting) on `site`, with the
    versions the sightings make stored (only those that are new anywhere on the site)."""
    versions = _versions_by_id(db, list(held.values()))
    before = {item: versions[version] for item, version in held.items()}
    now: dict[int, Description] = dict(before)
    changed: dict[int, Description] = {}
    for item, sighting in seen.items():
        was = before.get(item)
        now[item] = after = laid_over(was, sighting)
        if was is None or any(after[name] != was[name] for name in DESCRIBED):
            changed[item] = after
    return Described(now, _version_ids(db, site, changed))


def _versions_by_id(db: Session, ids: Sequence[int]) -> dict[int, Description]:
    found: dict[int, Description] = {}
    wanted = sorted(set(ids))
    for start in range(0, len(wanted), CHUNK):
        rows = db.execute(select(_TABLE).where(_TABLE.c.id.in_(wanted[start : start + CHUNK])))
        found.update((int(row.id), dict(row._mapping)) for row in rows)
    return found


def _version_ids(db: Session, site: str, wanted: Mapping[int, Description]) -> dict[int, int]:
    """The id of the version of each listing's description in `wanted` (item id ->
    description) on `site`, stored first where it is new; item id -> version id. Each
    version read back is held (`FOR KEY SHARE` on PostgreSQL) until the poll commits, so no
    drop takes it; one dropped between the insert and the read is inserted again."""
    digests = {item_id: digest(description) for item_id, description in wanted.items()}
    ids: dict[int, int] = {}
    for _ in range(READ_BACK_ATTEMPTS):
        missing = sorted(wanted.keys() - ids.keys())
        if not missing:
            break
        _insert_new(db, site, {item: wanted[item] for item in missing}, digests)
        ids.update(_read_back(db, site, missing, digests))
    if len(ids) != len(wanted):  # dropped again and again between insert and read
        raise RuntimeError(f"versions of {sorted(wanted.keys() - ids.keys())[:5]} not found")
    return ids


def _insert_new(
    db: Session, site: str, wanted: Mapping[int, Description], digests: Mapping[int, str]
) -> None:
    rows = [
        {
            "site": site,
            "item_id": item,
            "digest": digests[item],
            **{n: wanted[item][n] for n in DESCRIBED},
        }
        for item in sorted(wanted)
    ]
    dialect: Any = postgresql if _on_postgresql(db) else sqlite
    # One statement, compiled once and cached, run for every row.
    db.execute(dialect.insert(_TABLE).on_conflict_do_nothing(), rows)


def _read_back(
    db: Session, site: str, items: Sequence[int], digests: Mapping[int, str]
) -> dict[int, int]:
    ids: dict[int, int] = {}
    for start in range(0, len(items), CHUNK):
        chunk = items[start : start + CHUNK]
        query = select(_TABLE.c.id, _TABLE.c.item_id, _TABLE.c.digest).where(
            _TABLE.c.site == site,
            _TABLE.c.item_id.in_(chunk),
            _TABLE.c.digest.in_(sorted({digests[item] for item in chunk})),
        )
        if _on_postgresql(db):
            query = query.with_for_update(key_share=True)
        found = db.execute(query)
        ids.update((int(item), int(id_)) for id_, item, text in found if digests[item] == text)
    return ids


def drop_unheld(db: Session, candidates: Iterable[int]) -> int:
    """Delete the versions among `candidates` (ids) that no monitor holds any longer; how
    many went."""
    wanted = sorted(set(candidates))
    dropped = 0
    for start in range(0, len(wanted), CHUNK):
        held = exists().where(_HOLDERS.c.description_id == _TABLE.c.id)
        # Its own FROM, not correlated with the DELETE of the same table around it.
        doomed = (
            select(_TABLE.c.id)
            .where(_TABLE.c.id.in_(wanted[start : start + CHUNK]), ~held)
            .correlate(None)
        )
        if not _on_postgresql(db):
            dropped += rows_changed(db.execute(delete(_TABLE).where(_TABLE.c.id.in_(doomed))))
            continue
        # A version a poll is taking up is locked by it: skipped, not waited for.
        doomed = doomed.with_for_update(skip_locked=True)
        for _ in range(DROP_ATTEMPTS):
            try:
                with db.begin_nested():
                    gone = rows_changed(db.execute(delete(_TABLE).where(_TABLE.c.id.in_(doomed))))
                dropped += gone
                break
            except IntegrityError:  # a poll took one up and committed first: look again
                log.info("a version was taken up while it was dropped", exc_info=True)
    return dropped


def sweep_unheld(db: Session, after: int, limit: int = 5000) -> tuple[int, int] | None:
    """The housekeeping's sweep (`engine/_janitor.py`), one step: the versions among the
    `limit` next ids above `after` that no monitor holds are dropped. (the last id looked
    at, how many went), or None past the last version. A poll and a monitor's deletion drop
    what they leave behind themselves; this finds what a failure between the two left."""
    ids = list(
        db.scalars(
            select(_TABLE.c.id).where(_TABLE.c.id > after).order_by(_TABLE.c.id).limit(limit)
        )
    )
    if not ids:
        return None
    return ids[-1], drop_unheld(db, ids)


def _on_postgresql(db: Session) -> bool:
    return db.get_bind().dialect.name == "postgresql"
