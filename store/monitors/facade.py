"""The trio-facing facade of the monitor domain: `store.monitors`."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy.orm import Session

from ..market.site_listings import drop_unheld
from ..notify.alert_decisions import ErrorAlertRules
from . import listing_pages as pages
from . import polls as polls
from . import queries as repo
from .listing_filters import filtered_listing_page
from .poll_decisions import PollRules
from .records import (
    EncodedListingPage,
    FeedOrder,
    ListingEventRecord,
    ListingFilter,
    ListingPage,
    ListingRecord,
    MonitorRecord,
    MonitorStatus,
    NewMonitor,
    PollFailure,
    PollOutcome,
    PollRecord,
)

if TYPE_CHECKING:
    from .._store import Store

R = TypeVar("R")
K = TypeVar("K")  # the key a keyset page starts after

log = logging.getLogger(__name__)


class MonitorStore:
    def __init__(self, store: Store) -> None:
        self._bookmarks = pages.BookmarkCache()
        self._pages = pages.PageCache()
        self._store = store

    async def create(self, new: NewMonitor, *, at_most: int | None = None) -> MonitorRecord:
        """With `at_most` (the plan's active monitors): `QuotaFull` when the workspace has as
        many holding a slot, checked atomically with the insert (`store/accounts/quotas.py`)."""
        now = self._store.clock()
        return await self._store.unit(lambda db: repo.create_monitor(db, new, now, at_most=at_most))

    async def claim_slot(self, monitor_id: str, workspace_id: str, at_most: int) -> None:
        """A paused monitor made `active` within the plan's `at_most`; `QuotaFull` when full
        (see `_monitors.claim_slot`)."""
        await self._store.unit(lambda db: repo.claim_slot(db, monitor_id, workspace_id, at_most))

    async def get(self, monitor_id: str, workspace_id: str | None) -> MonitorRecord | None:
        """The monitor; pass the caller's workspace (None only for the engine's own use)."""
        return await self._store.unit(lambda db: repo.get_monitor(db, monitor_id, workspace_id))

    async def in_workspace(self, workspace_id: str) -> list[MonitorRecord]:
        return await self._store.unit(lambda db: repo.list_monitors(db, workspace_id))

    async def count_active(self, workspace_id: str) -> int:
        return await self._store.unit(lambda db: repo.count_active(db, workspace_id))

    async def to_resume(self) -> list[MonitorRecord]:
        return await self._store.unit(repo.monitors_to_resume)

    async def set_status(
        self, monitor_id: str, status: MonitorStatus, *, reset_errors: bool = False
    ) -> None:
        await self._store.unit(
            lambda db: repo.set_status(db, monitor_id, status, reset_errors=reset_errors)
        )

    async def delete(self, monitor_id: str, workspace_id: str) -> bool:
        return await self._store.unit(lambda db: repo.delete_monitor(db, monitor_id, workspace_id))

    async def known_live_listings(self, monitor_id: str) -> set[int]:
        return await self._store.unit(lambda db: repo.known_live_listings(db, monitor_id))

    async def feed_order(self, monitor_id: str, item_ids: Iterable[int]) -> FeedOrder:
        """The live listings (each with when the feed last showed it, so the engine can
        confirm the oldest drop-outs first) and the places in publication order a poll of a
        feed showing `item_ids` is judged by (`FeedOrder`). One unit."""
        ids = tuple(item_ids)
        return await self._store.unit(lambda db: repo.feed_order(db, monitor_id, ids))

    async def last_good_poll_items(self, monitor_id: str) -> int | None:
        """The `items` of the latest successful poll (None before any)."""
        poll = await self.last_good_poll(monitor_id)
        return None if poll is None else poll.items

    async def last_good_poll(self, monitor_id: str) -> PollRecord | None:
        """The latest successful poll (None before any): its `items` are what an empty or
        shrunken feed is compared with, its clock what the next poll's stamp is checked
        against."""
        return await self._store.unit(lambda db: repo.last_good_poll(db, monitor_id))

    async def record_poll(
        self,
        monitor_id: str,
        outcome: PollOutcome,
        *,
        decide: PollRules,
        lease_token: int | None = None,
    ) -> PollRecord:
        """Write one poll as `decide` rules it (the engine's listing state machine,
        `engine.decide_poll`: see `store/monitors/poll_decisions.py`), in one transaction; with
        `lease_token`, only while this node's lease holds (`LeaseLost` otherwise). Then, in
        a transaction of its own, the versions of descriptions the monitor moved on from go
        if no monitor holds them."""
        moved_on: list[int] = []

        def record_poll(db: Session) -> PollRecord:
            moved_on.clear()  # what an attempt PostgreSQL aborted had found (`Unit`) is moot
            return polls.record_poll(db, monitor_id, outcome, decide, lease_token, moved_on)

        record = await self._store.notify.unit(record_poll)
        if moved_on:
            try:
                await self._store.unit(lambda db: drop_unheld(db, moved_on))
            except Exception:  # the poll is recorded: a version left behind harms nothing
                log.warning(
                    "versions of monitor %s's old descriptions kept", monitor_id, exc_info=True
                )
        return record

    async def record_poll_error(
        self,
        monitor_id: str,
        failure: PollFailure,
        *,
        decide: ErrorAlertRules,
        lease_token: int | None = None,
    ) -> MonitorRecord | None:
        """Count a failed poll, finished now (see `PollFailure`); going to `error` queues the
        alerts `decide` draws from it (the engine's rules, `engine.decide_error_alerts`). With
        `lease_token`, only while this node's lease holds (`LeaseLost` otherwise)."""
        finished_at = self._store.clock()
        return await self._store.notify.unit(  # going to `error` may alert
            lambda db: polls.record_poll_error(
                db, monitor_id, failure, finished_at, decide, lease_token
            )
        )

    async def state_counts(self, monitor_id: str) -> dict[str, int]:
        """Listings per state (the four states, adding up to every listing)."""
        return await self._store.unit(lambda db: repo.state_counts(db, monitor_id))

    async def listing_counts(self, monitor_id: str) -> dict[str, int]:
        """`state_counts` plus `likely_sold`, the sold listings sold by absence (likely
        sales); `sold - likely_sold` are the confirmed sales. One row read."""
        return await self._store.unit(lambda db: repo.listing_counts(db, monitor_id))

    async def listings(
        self,
        monitor_id: str,
        states: Iterable[str] | None,
        page: int,
        page_size: int,
        *,
        workspace_id: str | None = None,
    ) -> ListingPage | None:
        """One page in item-id order, or None when the monitor is not found (in
        `workspace_id`, when given); deep pages seek through bookmarks (`listing_pages.py`)."""
        found = await self._page(monitor_id, states, page, page_size, workspace_id, False)
        assert not isinstance(found, EncodedListingPage)  # only when asked for
        return found

    async def encoded_listings(
        self,
        monitor_id: str,
        states: Iterable[str] | None,
        page: int,
        page_size: int,
        *,
        workspace_id: str | None = None,
    ) -> ListingPage | EncodedListingPage | None:
        """`listings`, for an answer in the API's JSON: the database writes the listings as
        that JSON (`listing_json.py`); a page it cannot write safely comes as records."""
        return await self._page(monitor_id, states, page, page_size, workspace_id, True)

    async def _page(
        self,
        monitor_id: str,
        states: Iterable[str] | None,
        page: int,
        page_size: int,
        workspace_id: str | None,
        encoded: bool,
    ) -> ListingPage | EncodedListingPage | None:
        key = pages.page_key(monitor_id, None if states is None else tuple(states))
        spot = (key, (page - 1) * page_size, page_size, encoded)
        read = partial(
            pages.listing_page,
            key=key,
            workspace_id=workspace_id,
            offset=spot[1],
            limit=page_size,
            known=self._pages.get(spot),
            encoded=encoded,
        )
        for _ in range(3):  # a poll landing between build and read makes the marks stale
            known = self._bookmarks.known(key)
            result = await self._store.glance(partial(read, bookmarks=known))
            if not isinstance(result, pages.BookmarksNeeded):
                return self._kept(spot, result)
            await self._build_bookmarks(key, result.version)
        # Still racing a busy monitor's polls: a plain OFFSET read is slower but correct (in a
        # worker thread: its cost grows with the page's depth, a glance's must not).
        plain = await self._store.read(partial(read, bookmarks=None))
        assert not isinstance(plain, pages.BookmarksNeeded)  # only asked for with bookmarks
        return self._kept(spot, plain)

    def _kept(
        self, spot: pages.PageSpot, read: pages.PageRead | None
    ) -> ListingPage | EncodedListingPage | None:
        if read is None:
            return None
        self._pages.put(spot, read)
        return read.page

    async def filtered_listings(
        self,
        monitor_id: str,
        listing_filter: ListingFilter,
        page: int,
        page_size: int,
        *,
        workspace_id: str | None = None,
    ) -> ListingPage | None:
        """One page of the listings `listing_filter` selects (a niche's), or None when the
        monitor is not found (in `workspace_id`, when given)."""
        return await self._store.unit(
            partial(
                filtered_listing_page,
                monitor_id=monitor_id,
                workspace_id=workspace_id,
                f=listing_filter,
                offset=(page - 1) * page_size,
                limit=page_size,
            )
        )

    async def _build_bookmarks(self, key: pages.PageKey, version: int) -> None:
        try:
            async with self._bookmarks.builder(key):
                if self._bookmarks.fresh(key, version) is None:
                    marks = await self._store.read(partial(pages.take_bookmarks, key=key))
                    self._bookmarks.put(key, marks)
        finally:
            self._bookmarks.release(key)

    def iter_listings(self, monitor_id: str, batch: int = 1000) -> AsyncIterator[ListingRecord]:
        """Every listing, a batch per transaction (keyset paging keeps memory flat)."""
        return self._keyset(repo.listings_after, monitor_id, batch, lambda row: row.item_id)

    def iter_events(self, monitor_id: str, batch: int = 2000) -> AsyncIterator[ListingEventRecord]:
        return self._keyset(repo.events_after, monitor_id, batch, lambda row: row.id)

    def iter_polls(self, monitor_id: str, batch: int = 1000) -> AsyncIterator[PollRecord]:
        return self._keyset(
            repo.polls_after, monitor_id, batch, lambda row: (row.started_at, row.id)
        )

    async def _keyset(
        self,
        read: Callable[[Session, str, K | None, int], list[R]],
        monitor_id: str,
        batch: int,
        key: Callable[[R], K],
    ) -> AsyncIterator[R]:
        """Every row `read` pages through, `batch` a transaction: each page starts after
        the `key` of the last row of the one before (None: from the start)."""
        after: K | None = None
        while True:
            rows = await self._store.unit(partial(_page, read, monitor_id, after, batch))
            for row in rows:
                yield row
            if len(rows) < batch:
                return
            after = key(rows[-1])


def _page(
    read: Callable[[Session, str, K | None, int], list[R]],
    monitor_id: str,
    after: K | None,
    limit: int,
    db: Session,
) -> list[R]:
    """One keyset page, its arguments bound first (`partial`) and the unit's session last."""
    return read(db, monitor_id, after, limit)
