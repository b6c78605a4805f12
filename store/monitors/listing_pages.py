"""Pages of a monitor's listings that cost about the same on page 20,000 as on page 1.

`LIMIT ... OFFSET n` makes the database walk past every skipped row, so page 20,000 of a
million listings walks a million index entries on every request. Instead we keep
*bookmarks*: the item id of every `BOOKMARK_EVERY`-th listing in page order (item id), per
monitor and state filter, found by one recursive query that hops from bookmark to bookmark.
They stay valid until the monitor records its next poll (`record_poll` is the only writer of
listings, and a version of a listing's description, once stored, never changes), which the
monitor's `polls` counter tells. A deep page seeks by key to the nearest
bookmark below it and skips fewer than `BOOKMARK_EVERY` rows from there.

Totals come from the per-state counts on the monitor row, never from `COUNT(*)`.

For the same reason a page read once is kept (`PageCache`) until the monitor's next poll:
asked again (an agent re-reading the newest page, a person paging back), it costs the one
small read of the monitor's counters instead of turning fifty rows into records again.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import trio
from sqlalchemy import Integer, Text, text
from sqlalchemy.orm import Session

from .._db.driver_reads import DriverRead, Reader, dialect_name, record_columns, result_names
from .._db.rows import field_names
from .listing_json import page_json_sql, postgres_page_json_sql
from .models import Listing
from .records import LISTING_STATES, EncodedListingPage, ListingPage, ListingRecord

BOOKMARK_EVERY = 1000
K = TypeVar("K")
V = TypeVar("V")
# (monitor id, sorted states or () for every state): the key of one bookmark list.
PageKey = tuple[str, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Bookmarks:
    version: int  # the monitor's `polls` when they were taken
    item_ids: tuple[int, ...]  # item_ids[k] is the item id of row k * BOOKMARK_EVERY


@dataclass(frozen=True, slots=True)
class PageRead:
    """A page as read, with the monitor's `polls` it was read at (the cache's version)."""

    page: ListingPage | EncodedListingPage
    version: int


# A page of the cache: the filter's key, the offset, the page size, and whether encoded.
PageSpot = tuple[PageKey, int, int, bool]


class BoundedLru(Generic[K, V]):
    """At most `capacity` entries, the least recently used dropped first. Owned by the Trio
    thread: a unit of work gets what it needs from it before it starts."""

    def __init__(self, capacity: int = 256) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)


# Pages read at a known version (a page of 50 listings is about 50 kB).
PageCache = BoundedLru[PageSpot, PageRead]


@dataclass(frozen=True, slots=True)
class KnownBookmarks:
    """The bookmarks of a key as known before a read, whatever their version."""

    marks: Bookmarks | None

    def at(self, version: int) -> Bookmarks | None:
        """The marks, if they are those of `version` (the monitor's polls the read found)."""
        return self.marks if self.marks is not None and self.marks.version == version else None


@dataclass(frozen=True, slots=True)
class BookmarksNeeded:
    """A deep page was asked for and no fresh bookmarks exist: build them, then ask again."""

    version: int


def page_key(monitor_id: str, states: tuple[str, ...] | None) -> PageKey:
    """`None` and the full set of states both mean "no filter". A state that is none of
    `LISTING_STATES` is a `ValueError`: states name the counters' columns in the SQL."""
    if states is not None and not set(states) <= set(LISTING_STATES):
        raise ValueError(f"unknown listing states: {sorted(set(states) - set(LISTING_STATES))}")
    if states is None or set(states) >= set(LISTING_STATES):
        return (monitor_id, ())
    return (monitor_id, tuple(sorted(set(states))))


class BookmarkCache:
    """Bookmarks of the most recently paged monitors (bounded), with one builder per key."""

    def __init__(self, capacity: int = 256) -> None:
        self._entries: BoundedLru[PageKey, Bookmarks] = BoundedLru(capacity)
        self._builders: dict[PageKey, trio.Lock] = {}

    def fresh(self, key: PageKey, version: int) -> Bookmarks | None:
        marks = self._entries.get(key)
        return marks if marks is not None and marks.version == version else None

    def known(self, key: PageKey) -> KnownBookmarks:
        """The marks known now, for `listing_page`, which reads nothing of this cache: the
        read may run in a worker thread, and the cache belongs to the Trio thread."""
        return KnownBookmarks(self._entries.get(key))

    def put(self, key: PageKey, marks: Bookmarks) -> None:
        self._entries.put(key, marks)

    def builder(self, key: PageKey) -> trio.Lock:
        """The lock that makes concurrent requests for one key wait for a single build
        instead of each scanning the index (a thundering herd right after every poll)."""
        lock = self._builders.get(key)
        if lock is None:
            lock = self._builders[key] = trio.Lock()
        return lock

    def release(self, key: PageKey) -> None:
        lock = self._builders.get(key)
        if lock is not None and not lock.locked() and lock.statistics().tasks_waiting == 0:
            del self._builders[key]


def _filter(states: tuple[str, ...]) -> tuple[str, dict[str, object]]:
    if not states:
        return "", {}
    names = [f"s{i}" for i in range(len(states))]
    clause = f" AND state IN ({', '.join(':' + n for n in names)})"
    return clause, dict(zip(names, states, strict=True))


# The statements of the page reads, one per shape (the states filtered on, a workspace or
# not, a bookmark or not): at most a few dozen, each compiled once per dialect.
_HEADS: dict[tuple[tuple[str, ...], bool], DriverRead[tuple[int, ...]]] = {}
_PAGES: dict[tuple[str, bool], DriverRead[ListingRecord]] = {}
_PAGES_JSON: dict[tuple[str, str, bool], DriverRead[tuple[str, int | None]]] = {}
_HEADS_AND_PAGES: dict[tuple[tuple[str, ...], bool, str, bool], DriverRead[tuple[Any, ...]]] = {}
# A listing's record read from the `listings` view (as `l`), and the types of its columns.
_LISTING_COLUMNS, _LISTING_TYPES = record_columns(Listing, field_names(ListingRecord), "l")
_LISTING_NAMES = result_names(Listing, field_names(ListingRecord), "l")


def _head_sql(counted: tuple[str, ...], in_workspace: bool, *extra: str) -> str:
    """The monitor's `polls` and the counters of `counted` (states of `LISTING_STATES` only:
    `page_key` checks), then the `extra` columns."""
    columns = ", ".join(["polls", *(f"{state}_count" for state in counted), *extra])
    owner = " AND workspace_id = :workspace" if in_workspace else ""
    return f"SELECT {columns} FROM monitors WHERE id = :monitor{owner}"


def _head(counted: tuple[str, ...], in_workspace: bool) -> DriverRead[tuple[int, ...]]:
    read = _HEADS.get((counted, in_workspace))
    if read is None:
        read = _HEADS[(counted, in_workspace)] = DriverRead(
            _head_sql(counted, in_workspace),
            [Integer()] * (len(counted) + 1),
            lambda *values: values,
        )
    return read


def _head_and_page(
    counted: tuple[str, ...], in_workspace: bool, clause: str, seek: str
) -> DriverRead[tuple[Any, ...]]:
    """PostgreSQL: the monitor's counters and the page's JSON in one statement, one round
    trip where there were two. The page is a scalar subquery of the monitor's row, so it is
    read only when the monitor is found (in the workspace): another workspace's monitor
    costs what a missing one does."""
    key = (counted, in_workspace, clause, bool(seek))
    read = _HEADS_AND_PAGES.get(key)
    if read is None:
        page = postgres_page_json_sql(
            _page_sql(clause, seek), field_names(ListingRecord), _LISTING_NAMES, _LISTING_TYPES
        )
        read = _HEADS_AND_PAGES[key] = DriverRead(
            _head_sql(counted, in_workspace, f"({page})"),
            [*[Integer()] * (len(counted) + 1), Text()],
            lambda *values: values,
        )
    return read


def _version_and_total(
    db: Reader, monitor_id: str, workspace_id: str | None, states: tuple[str, ...]
) -> tuple[int, int] | None:
    """The monitor's poll counter and the filter's total, or None if it is not there (or,
    with `workspace_id`, not in that workspace)."""
    counted = states or LISTING_STATES
    read = _head(counted, workspace_id is not None)
    head = read.first(db, {"monitor": monitor_id, "workspace": workspace_id})
    if head is None:
        return None
    return int(head[0]), sum(int(n) for n in head[1:])


def _page_sql(clause: str, seek: str) -> str:
    """The page's keys come from an index of the monitor's own table alone ((monitor_id,
    state, item_id) or the primary key); only the page's own rows are read in full, through
    the `listings` view (the monitor's row and the site's description)."""
    return (
        f"SELECT {', '.join(_LISTING_COLUMNS)} FROM listings l "
        "WHERE l.monitor_id = :monitor AND l.item_id IN ("
        f"SELECT item_id FROM monitor_listings WHERE monitor_id = :monitor{clause}{seek} "
        "ORDER BY item_id LIMIT :limit OFFSET :skip) ORDER BY l.item_id"
    )


def _page(clause: str, seek: str) -> DriverRead[ListingRecord]:
    read = _PAGES.get((clause, bool(seek)))
    if read is None:
        read = _PAGES[(clause, bool(seek))] = DriverRead(
            _page_sql(clause, seek),
            _LISTING_TYPES,
            ListingRecord,
            names=_LISTING_NAMES,  # fifty rows: on SQLite in one step
        )
    return read


def _page_json(dialect: str, clause: str, seek: str) -> DriverRead[tuple[str, int | None]]:
    """The same page as the API's JSON, written by the database (`listing_json.py`)."""
    read = _PAGES_JSON.get((dialect, clause, bool(seek)))
    if read is None:
        sql = page_json_sql(
            dialect,
            _page_sql(clause, seek),
            field_names(ListingRecord),
            _LISTING_NAMES,
            _LISTING_TYPES,
        )
        read = _PAGES_JSON[(dialect, clause, bool(seek))] = DriverRead(
            sql, [Text(), Integer()], lambda listings, canonical: (listings, canonical)
        )
    return read


def listing_page(
    db: Reader,
    key: PageKey,
    workspace_id: str | None,
    offset: int,
    limit: int,
    bookmarks: KnownBookmarks | None,
    known: PageRead | None = None,
    encoded: bool = False,
) -> PageRead | BookmarksNeeded | None:
    """Rows `offset .. offset + limit` in item-id order, with the filter's total; None when
    the monitor is not found (in `workspace_id`, when given). `encoded`: written as the
    API's JSON by the database (`EncodedListingPage`, `listing_json.py`), unless a datetime
    of the page is not in the form SQLite stores (then, and without `encoded`, as records).

    `bookmarks`, the bookmarks known, are used for a deep page if they are the version the
    read finds, so that fewer than `BOOKMARK_EVERY` index entries are ever skipped (what
    lets the read be a glance on the Trio thread, `Unit.glance`); `None` reads by plain
    OFFSET, whatever the depth. `known` is this page as read before: answered as it is if
    the monitor has not polled since. Two statements: the monitor's counters, then the page;
    on PostgreSQL a page not read before is one (`_head_and_page`). This is the hottest read
    of the API, so they go to the driver as SQL compiled once (`DriverRead`)."""
    monitor_id, states = key
    clause, params = _filter(states)
    params.update(monitor=monitor_id, limit=limit)
    if encoded and known is None and bookmarks is not None and dialect_name(db) == "postgresql":
        found = _read_with_head(db, key, workspace_id, offset, bookmarks.marks, clause, params)
        if not isinstance(found, _TwoStatements):
            return found
    head = _version_and_total(db, monitor_id, workspace_id, states)
    if head is None:
        return None
    version, total = head
    if known is not None and known.version == version:
        return known
    if offset >= total:  # past the end: nothing to read (and no huge OFFSET to overflow)
        return _empty(encoded, total, version)
    seek, skip = "", offset
    if offset >= BOOKMARK_EVERY and bookmarks is not None:
        marks = bookmarks.at(version)
        if marks is None:
            return BookmarksNeeded(version)
        if not marks.item_ids:  # counts ahead of the rows (a race with a poll): nothing here
            return PageRead(ListingPage(listings=[], total=total), version)
        seek, skip, params["mark"] = _from_mark(offset, marks)
    params["skip"] = skip
    if encoded:
        written = _page_json(dialect_name(db), clause, seek).first(db, params)
        assert written is not None  # an aggregate answers one row
        listings, canonical = written
        if canonical != 0:  # 1, or NULL for no rows
            return PageRead(EncodedListingPage(listings.encode(), total), version)
    page = _page(clause, seek).all(db, params)
    return PageRead(ListingPage(listings=page, total=total), version)


class _TwoStatements:
    """A one-statement read could not answer: a deep page without bookmarks, or with
    bookmarks of another version than the one the read found."""


_TWO_STATEMENTS = _TwoStatements()


def _read_with_head(
    db: Reader,
    key: PageKey,
    workspace_id: str | None,
    offset: int,
    marks: Bookmarks | None,
    clause: str,
    params: dict[str, object],
) -> PageRead | _TwoStatements | None:
    """PostgreSQL: the counters and the encoded page in one statement, seeking from the
    bookmarks known; `_TWO_STATEMENTS` when those cannot serve, and the two-statement read
    decides (it builds bookmarks if need be)."""
    seek, skip, mark = "", offset, None
    if offset >= BOOKMARK_EVERY:
        if marks is None or not marks.item_ids:
            return _TWO_STATEMENTS
        seek, skip, mark = _from_mark(offset, marks)
    counted = key[1] or LISTING_STATES
    read = _head_and_page(counted, workspace_id is not None, clause, seek)
    row = read.first(db, {**params, "workspace": workspace_id, "skip": skip, "mark": mark})
    if row is None:
        return None
    version, total = int(row[0]), sum(int(n) for n in row[1:-1])
    if marks is not None and seek and marks.version != version:
        return _TWO_STATEMENTS
    if offset >= total:
        return _empty(True, total, version)
    return PageRead(EncodedListingPage(str(row[-1]).encode(), total), version)


def _from_mark(offset: int, marks: Bookmarks) -> tuple[str, int, int]:
    """The seek from the nearest bookmark at or before `offset`: (its SQL, the rows to skip
    after it, its item id). `marks` holds at least one."""
    mark = min(offset // BOOKMARK_EVERY, len(marks.item_ids) - 1)
    return " AND item_id >= :mark", offset - mark * BOOKMARK_EVERY, marks.item_ids[mark]


def _empty(encoded: bool, total: int, version: int) -> PageRead:
    if encoded:
        return PageRead(EncodedListingPage(listings_json=b"[]", total=total), version)
    return PageRead(ListingPage(listings=[], total=total), version)


def take_bookmarks(db: Session, key: PageKey) -> Bookmarks:
    """Every `BOOKMARK_EVERY`-th item id of the filter, in one statement: each step of the
    recursion seeks by key from the previous bookmark and skips `BOOKMARK_EVERY` index
    entries, so the whole walk stays inside the database."""
    monitor_id, states = key
    head = _version_and_total(db, monitor_id, None, states)
    version = head[0] if head is not None else -1
    clause, params = _filter(states)
    walk = f"""
        WITH RECURSIVE marks(item_id) AS (
            SELECT min(item_id) FROM monitor_listings WHERE monitor_id = :monitor{clause}
            UNION ALL
            SELECT (SELECT item_id FROM monitor_listings
                    WHERE monitor_id = :monitor{clause} AND item_id >= marks.item_id
                    ORDER BY item_id LIMIT 1 OFFSET :every)
            FROM marks WHERE marks.item_id IS NOT NULL
        )
        SELECT item_id FROM marks WHERE item_id IS NOT NULL
    """
    found = db.scalars(text(walk), {"monitor": monitor_id, "every": BOOKMARK_EVERY, **params})
    return Bookmarks(version=version, item_ids=tuple(int(i) for i in found))
