"""One marketplace request per distinct search and per listing, shared by every monitor of a
node that needs it (issue #31: the marketplace's patience is per IP address, so ten users
watching one search must not cost ten times it).

`SharedMarketplace` is a `Marketplace` wrapped around the real one:

- `fetch_feed` is keyed by the canonical catalogue URL (`check_url`'s answer) and page cap.
  Callers of one key while its request is in flight wait for that request (single flight);
  a caller whose poll comes within `fresh_within` seconds of the last fetch gets its answer
  again. A failure reaches every waiter and is never kept: the next caller asks again.
- `fetch_state` is keyed by (site, item id). A final answer (sold or deleted, from a source)
  is kept for `final_seconds` for every monitor holding the listing; any other answer, and an
  answer without a state (`STATELESS_KINDS`: the marketplace answered, nothing readable), is
  shared only within the caller's `fresh_within`, like a feed. Refusals are never kept.

Requests run in a nursery this object owns (`run`, started by the engine), not in a caller's
task: a caller cancelled while waiting (its poll timed out, its monitor stopped) leaves the
request to the others. Entries are bounded in number (least recently used first out) and
dropped once older than the longest reuse any caller asked of them, so attacker-made
searches cannot grow memory. Sharing is per node; in a cluster the monitors of one search
run on one node (store/cluster/searches.py), so one node polls each search.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Generic, TypeVar

import trio

from store import ConfirmedState, site_of

from ..market import CatalogueUrlRefused, Feed, Marketplace, OriginReport, PastedSession
from ._listing_states import STATELESS_KINDS

T = TypeVar("T")
Key = tuple[str, int]  # (canonical URL, page cap) or (site, item id)
FINAL_STATES = ("sold", "deleted")


@dataclass(frozen=True, slots=True)
class SharingSettings:
    max_feeds: int = 1000  # distinct (search, page cap) entries kept
    max_states: int = 20_000  # (site, item) answers kept
    max_age_seconds: float = 7 * 24 * 3600.0  # the longest monitor interval allowed
    final_seconds: float = 6 * 3600.0  # how long a sold or deleted answer serves everyone
    max_subscribers_shown: int = 20  # monitor ids listed per feed in the operators' view


@dataclass(frozen=True, slots=True)
class SharedFeedReport:
    """One shared feed as operators see it (never a workspace: it says who else watches)."""

    url: str
    page_cap: int
    subscribers: int  # monitors that asked for it within its reuse window
    subscriber_ids: tuple[str, ...]  # the most recent of them
    fetches: int
    reuses: int  # answers given without a request of their own (in flight or kept)
    last_fetch_at: datetime | None


@dataclass(frozen=True, slots=True)
class SharingReport:
    feeds: tuple[SharedFeedReport, ...]
    state_hits: int
    state_misses: int
    states_kept: int


class SharingClosed(Exception):
    """The request was cut short because the node is shutting down."""


class _Flight(Generic[T]):
    """One request and, once done, its answer or error, for every caller that waits on it."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.scope = trio.CancelScope()  # cancelled once nobody waits for the answer
        self.waiters = 0
        self.value: T | None = None
        self.error: Exception | None = None
        self.trace: TracebackType | None = None  # where the request failed
        self.at = 0.0  # trio time the answer came

    def answer(self) -> T:
        if self.error is not None:
            raise self.error.with_traceback(self.trace)  # not the previous waiters' frames
        assert self.value is not None
        return self.value


class _Slot(Generic[T]):
    """A key's latest flight and its counters (kept across flights, dropped with the key)."""

    def __init__(self) -> None:
        self.flight: _Flight[T] | None = None
        self.keep = 0.0  # the longest reuse a caller asked of it: older is useless
        self.fetches = 0
        self.reuses = 0
        self.last_fetch_at: datetime | None = None
        self.subscribers: dict[str, float] = {}


class _Table(Generic[T]):
    """A bounded LRU of slots; `share` is the single-flight-and-reuse rule."""

    def __init__(self, limit: int, max_age: float) -> None:
        self.slots: OrderedDict[Key, _Slot[T]] = OrderedDict()
        self._limit = max(1, limit)
        self._max_age = max_age

    def slot(self, key: Key) -> _Slot[T]:
        slot = self.slots.get(key)
        if slot is None:
            slot = self.slots[key] = _Slot()
            self._prune()
        self.slots.move_to_end(key)
        return slot

    def _prune(self) -> None:
        now = trio.current_time()
        while len(self.slots) > self._limit or (self.slots and self._stale(now)):
            self.slots.popitem(last=False)

    def _stale(self, now: float) -> bool:
        slot = next(iter(self.slots.values()))
        flight = slot.flight
        if flight is None or not flight.done.is_set():
            return False
        return now - flight.at > min(slot.keep, self._max_age)


def _usable(flight: _Flight[T] | None, now: float, within: float) -> bool:
    if flight is None:
        return False
    if not flight.done.is_set():
        return True  # in flight: wait for it
    kept = flight.error is None or isinstance(flight.error, _Stateless)
    return kept and now - flight.at < within


class SharedMarketplace:
    """A `Marketplace` sharing requests between the monitors of one node (module doc)."""

    def __init__(self, inner: Marketplace, settings: SharingSettings | None = None) -> None:
        self.inner = inner
        self.settings = settings or SharingSettings()
        s = self.settings
        self._feeds: _Table[Feed] = _Table(s.max_feeds, s.max_age_seconds)
        self._states: _Table[ConfirmedState] = _Table(s.max_states, s.max_age_seconds)
        self._canonical: OrderedDict[str, str] = OrderedDict()
        self._nursery: trio.Nursery | None = None
        self.state_hits = 0
        self.state_misses = 0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own the shared requests until cancelled (the engine's nursery runs this)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None

    # -- the Marketplace protocol --------------------------------------------------------------

    async def check_url(self, url: str) -> str:
        return await self.inner.check_url(url)

    async def fetch_feed(
        self,
        url: str,
        page_cap: int,
        *,
        fresh_within: float = 0.0,
        subscriber: str | None = None,
    ) -> Feed:
        canonical = await self._key(url)
        slot = self._feeds.slot((canonical, page_cap))
        now = trio.current_time()
        slot.keep = max(slot.keep, fresh_within)
        if subscriber is not None:
            self._subscribe(slot, subscriber, now, fresh_within)
        if _usable(slot.flight, now, fresh_within):
            slot.reuses += 1
        else:
            slot.fetches += 1
            slot.last_fetch_at = datetime.now(UTC)
            # The key's URL, not this caller's spelling of it: whoever launches the request,
            # every caller of the key gets the feed of the search the key names.
            slot.flight = self._launch(lambda: self.inner.fetch_feed(canonical, page_cap))
        feed = await self._wait(slot)
        self._forget_states(canonical, feed)
        return feed

    async def fetch_state(
        self, url: str, item_id: int, *, fresh_within: float = 0.0
    ) -> ConfirmedState:
        slot = self._states.slot((site_of(url), item_id))
        now = trio.current_time()
        flight = slot.flight
        within = fresh_within
        if flight is not None and flight.done.is_set() and _final(flight):
            within = max(within, self.settings.final_seconds)
        slot.keep = max(slot.keep, within)
        if _usable(flight, now, within):
            self.state_hits += 1
        else:
            self.state_misses += 1
            slot.flight = self._launch(lambda: self.inner.fetch_state(url, item_id), stateless=True)
        return await self._wait(slot)

    def failure_kind(self, error: Exception) -> str | None:
        if isinstance(error, _Stateless):
            return self.inner.failure_kind(error.error)
        return self.inner.failure_kind(error)

    def note_suspicious(self, url: str, kind: str) -> None:
        self.inner.note_suspicious(url, kind)

    # -- the operators' view ------------------------------------------------------------------

    def origin_reports(self) -> list[OriginReport]:
        return self.inner.origin_reports()

    async def take_operator_session(
        self, site: str, cookie_text: str, user_agent: str | None
    ) -> PastedSession:
        return await self.inner.take_operator_session(site, cookie_text, user_agent)

    def report(self) -> SharingReport:
        """Every feed kept, busiest first; and the item lookups' hits and misses."""
        now = trio.current_time()
        feeds = []
        for (url, page_cap), slot in self._feeds.slots.items():
            recent = [m for m, until in slot.subscribers.items() if until >= now]
            feeds.append(
                SharedFeedReport(
                    url=url,
                    page_cap=page_cap,
                    subscribers=len(recent),
                    subscriber_ids=tuple(recent[-self.settings.max_subscribers_shown :]),
                    fetches=slot.fetches,
                    reuses=slot.reuses,
                    last_fetch_at=slot.last_fetch_at,
                )
            )
        feeds.sort(key=lambda f: (-f.subscribers, f.url, f.page_cap))
        return SharingReport(
            tuple(feeds), self.state_hits, self.state_misses, len(self._states.slots)
        )

    # -- the machinery ------------------------------------------------------------------------

    async def _key(self, url: str) -> str:
        """The catalogue URL as the client normalises it, so that spellings of one search
        share; a URL it refuses is its own key (its fetch fails with the client's error)."""
        known = self._canonical.get(url)
        if known is None:
            try:
                known = await self.inner.check_url(url)
            except CatalogueUrlRefused:
                known = url
            self._canonical[url] = known
            while len(self._canonical) > self.settings.max_feeds:
                self._canonical.popitem(last=False)
        self._canonical.move_to_end(url)
        return known

    def _forget_states(self, url: str, feed: Feed) -> None:
        """A listing in a feed is for sale again, whatever a kept lookup said (a deleted
        listing relisted, say): its next lookup asks the marketplace."""
        site = site_of(url)
        for listing in feed.listings:
            slot = self._states.slots.get((site, listing.item_id))
            if slot is not None and slot.flight is not None and slot.flight.done.is_set():
                slot.flight = None

    def _subscribe(self, slot: _Slot[Feed], monitor: str, now: float, within: float) -> None:
        slot.subscribers.pop(monitor, None)
        slot.subscribers[monitor] = now + max(within / 0.9, 1.0)  # about one interval
        for gone in [m for m, until in slot.subscribers.items() if until < now]:
            del slot.subscribers[gone]

    def _launch(self, request: Callable[[], Awaitable[T]], stateless: bool = False) -> _Flight[T]:
        if self._nursery is None:
            raise RuntimeError("SharedMarketplace used before its `run` started")
        flight: _Flight[T] = _Flight()
        self._nursery.start_soon(self._fly, flight, request, stateless)
        return flight

    async def _fly(
        self,
        flight: _Flight[T],
        request: Callable[[], Awaitable[T]],
        stateless: bool,
    ) -> None:
        try:
            with flight.scope:
                flight.value = await request()
        except Exception as err:
            # An answer without a state is an answer (shared like one); a refusal is not.
            kept = stateless and self.inner.failure_kind(err) in STATELESS_KINDS
            flight.error = _Stateless(err) if kept else err
            flight.trace = err.__traceback__
        finally:
            if flight.value is None and flight.error is None:  # cancelled
                flight.error = SharingClosed("cut short: the node is stopping, or nobody waits")
            flight.at = trio.current_time()
            flight.done.set()

    @staticmethod
    async def _wait(slot: _Slot[T]) -> T:
        flight = slot.flight
        assert flight is not None
        # Only this caller's wait is cancelled with it: the request goes on for the others.
        # One error object reaches every waiter (and, kept, every reuse): each raise starts
        # again from the request's own traceback, or every raise would add its frames to the
        # object's and keep them, and their locals, alive as long as the error is kept.
        flight.waiters += 1
        try:
            await flight.done.wait()
        finally:
            flight.waiters -= 1
            if flight.waiters == 0 and not flight.done.is_set():
                # Abandoned (its callers stopped: a monitor handed to another node, say): no
                # request outlives every actor that wanted it, and nobody reuses the stump.
                flight.scope.cancel()
                if slot.flight is flight:
                    slot.flight = None
        error = flight.error
        if isinstance(error, _Stateless):
            raise error.error.with_traceback(flight.trace)
        return flight.answer()


class _Stateless(Exception):
    """A kept lookup error: the marketplace answered, without a state."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _final(flight: _Flight[ConfirmedState]) -> bool:
    value = flight.value
    return value is not None and value.state in FINAL_STATES and value.evidence != "absence"
