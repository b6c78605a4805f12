"""A feed's categories: ids from the query, names learned from item pages (items carry none).

A listing's category id comes from its feed (`with_category`: the query's category, or the
legacy item's `catalog_id`); its name, the path people know ("Women › Clothing › Jeans"; on the
real site a localised one such as "Donna Reggiseni sportivi"), only from a public item page's
JSON-LD `category`. So for each category of a feed whose name is not known, one item page is
read (the category's first organic listing) and the name is remembered per (site, category id).
Policy:

- A name is read again a day after it was read. Until a new reading succeeds the old name is
  still used: names rarely change, and a refused page must not unname a niche.
- A failure (page refused, gone, unreadable, blocked) is the name's, never the feed's: it is
  logged and that category is not asked again before a backoff (10 minutes, doubling, at most a
  day), so a failing page is not asked on every poll. A page that answers without a category
  (the legacy pages) is asked again a day later.
- A category being asked is not asked by another feed meanwhile; at most `ASKED_PER_FEED`
  categories are asked per feed (a legacy feed without a category filter can hold many).
- The memory is in-process and bounded (`KEPT` categories, least recently used forgotten first).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import trio

from .errors import MarketplaceError
from .models import CataloguePage, ItemDetail, Listing

log = logging.getLogger(__name__)

DAY = 86_400.0
FIRST_BACKOFF = 600.0
ASKED_PER_FEED = 10
KEPT = 4096
NAME_CHARS = 200  # what a stored listing keeps of a name
PageReader = Callable[[str, int], Awaitable[ItemDetail]]
"""`read(site origin, item id)`: the listing's item page, through the adapter's client."""


@dataclass
class _Entry:
    name: str | None = None
    next_ask: float = 0.0  # trio time at which the page may be asked (again)
    failures: int = 0  # in a row


def clean_name(value: str | None) -> str | None:
    """One line of at most `NAME_CHARS` characters, or None."""
    if value is None:
        return None
    text = " ".join(value.split())[:NAME_CHARS].strip()
    return text or None


class CategoryNames:
    """The names of the categories seen per site (see the module doc for the policy)."""

    def __init__(
        self,
        *,
        ttl: float = DAY,
        first_backoff: float = FIRST_BACKOFF,
        kept: int = KEPT,
        clock: Callable[[], float] = trio.current_time,
    ) -> None:
        self.ttl, self.first_backoff, self.kept, self._clock = ttl, first_backoff, kept, clock
        self._entries: OrderedDict[tuple[str, int], _Entry] = OrderedDict()

    def name_of(self, origin: str, category_id: int) -> str | None:
        entry = self._entries.get((origin.rstrip("/"), category_id))
        return entry.name if entry is not None else None

    def _entry(self, origin: str, category_id: int) -> _Entry:
        key = (origin.rstrip("/"), category_id)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
            while len(self._entries) > self.kept:
                self._entries.popitem(last=False)
        self._entries.move_to_end(key)
        return entry

    async def name_feed(self, origin: str, feed: CataloguePage, read: PageReader) -> CataloguePage:
        """`feed` with each listing of a named category carrying the name (a name the listing
        already has is kept). Never raises for a page it could not read."""
        firsts: dict[int, Listing] = {}  # category -> the listing whose page is asked
        for listing in feed.listings:
            category = listing.category_id
            if category is None:
                continue
            known = firsts.get(category)
            if known is None or (known.promoted and not listing.promoted):
                firsts[category] = listing
        asked = 0
        for category, listing in firsts.items():
            entry = self._entry(origin, category)
            if entry.next_ask <= self._clock() and asked < ASKED_PER_FEED:
                asked += 1
                await self._ask(origin, category, listing.id, entry, read)
        names = {c: name for c in firsts if (name := self.name_of(origin, c)) is not None}
        if not names:
            return feed
        listings = tuple(
            replace(listing, category_name=names[listing.category_id])
            if listing.category_name is None and listing.category_id in names
            else listing
            for listing in feed.listings
        )
        return replace(feed, listings=listings)

    async def _ask(
        self, origin: str, category: int, item_id: int, entry: _Entry, read: PageReader
    ) -> None:
        # Claimed before the request: a concurrent feed of this category does not ask too.
        entry.next_ask = self._clock() + self._backoff(entry.failures + 1)
        try:
            detail = await read(origin, item_id)
        except MarketplaceError as err:
            entry.failures += 1
            entry.next_ask = self._clock() + self._backoff(entry.failures)
            log.info("category %s of %s not named (item %s): %s", category, origin, item_id, err)
            return
        name = clean_name(detail.listing.category_name)
        if name is None:  # the page answered but names no category: ask again a day later
            entry.failures += 1
            entry.next_ask = self._clock() + self.ttl
            log.info("category %s of %s: item %s names none", category, origin, item_id)
            return
        entry.name, entry.failures, entry.next_ask = name, 0, self._clock() + self.ttl

    def _backoff(self, failures: int) -> float:
        return min(self.ttl, self.first_backoff * 2.0 ** min(failures - 1, 20))


def with_category(feed: CataloguePage, category: int | None) -> CataloguePage:
    """Listings of a one-category feed belong to that category unless they say otherwise."""
    if category is None:
        return feed
    listings = tuple(
        listing if listing.category_id is not None else _known_category(listing, category)
        for listing in feed.listings
    )
    return replace(feed, listings=listings)


def _known_category(listing: Listing, category: int) -> Listing:
    missing = tuple(m for m in listing.missing if m != "category_id")
    return replace(listing, category_id=category, missing=missing)
