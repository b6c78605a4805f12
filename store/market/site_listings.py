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
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

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
_TABLE = SiteListing.__table__


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
    description) on `site`, stored first where it is new; item id -> version id."""
    if not wanted:
        return {}
    digests = {item_id: digest(description) for item_id, description in wanted.items()}
    items = sorted(wanted)
    rows = [
        {
            "site": site,
            "item_id": item,
            "digest": digests[item],
            **{n: wanted[item][n] for n in DESCRIBED},
        }
        for item in items
    ]
    dialect: Any = postgresql if db.get_bind().dialect.name == "postgresql" else sqlite
    # One statement, compiled once and cached, run for every row.
    db.execute(dialect.insert(_TABLE).on_conflict_do_nothing(), rows)
    ids: dict[int, int] = {}
    for start in range(0, len(items), CHUNK):
        chunk = items[start : start + CHUNK]
        found = db.execute(
            select(_TABLE.c.id, _TABLE.c.item_id, _TABLE.c.digest).where(
                _TABLE.c.site == site,
                _TABLE.c.item_id.in_(chunk),
                _TABLE.c.digest.in_(sorted({digests[item] for item in chunk})),
            )
        )
        ids.update((int(item), int(id_)) for id_, item, text in found if digests[item] == text)
    if len(ids) != len(wanted):  # never, unless a version vanished between insert and read
        raise RuntimeError(f"versions of {sorted(set(wanted) - ids.keys())[:5]} not found")
    return ids
