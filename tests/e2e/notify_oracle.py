"""The oracle of the notification end-to-end tests: from what the database says a monitor saw,
which alerts each rule should have sent, computed independently of the store's own code.

A rule here is `Want`: the few filters the tests use, re-implemented in a few lines (brands,
case-insensitive exact; a price range, bounds included; keywords in the title, any of the
included and none of the excluded, case-insensitive). What a rule selects:
- `new_listing`: every listing whose `new` event belongs to a successful poll after the
  monitor's bootstrap poll (the first successful one), judged at that first sight;
- `price_drop`: every listing with a `price` event below the price it had before (at most one
  alert per listing and rule, whatever number of drops), judged at the new price.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from store import ListingEventRecord, ListingRecord, PollRecord, Store

Selected = tuple[int, str]  # (item_id, kind)


@dataclass(frozen=True)
class Want:
    """A rule as the test means it (and sends it to the API)."""

    name: str
    kinds: tuple[str, ...]
    brands: tuple[str, ...] = ()
    price_min: Decimal | None = None
    price_max: Decimal | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def body(self, channel_id: str) -> dict[str, Any]:
        """The `POST /api/notifications/rules` body: a workspace default rule (every monitor
        without rules of its own uses it) sending to one channel."""
        filters: dict[str, Any] = {
            "brands": list(self.brands),
            "include_keywords": list(self.include),
            "exclude_keywords": list(self.exclude),
        }
        if self.price_min is not None:
            filters["price_min"] = float(self.price_min)
        if self.price_max is not None:
            filters["price_max"] = float(self.price_max)
        return {
            "name": self.name,
            "kinds": list(self.kinds),
            "filters": filters,
            "channel_ids": [channel_id],
        }

    def passes(self, title: str | None, brand: str | None, price: Decimal | None) -> bool:
        folded = (title or "").casefold()
        if self.brands and (brand or "").casefold() not in {b.casefold() for b in self.brands}:
            return False
        if self.price_min is not None and (price is None or price < self.price_min):
            return False
        if self.price_max is not None and (price is None or price > self.price_max):
            return False
        if self.include and not any(k.casefold() in folded for k in self.include):
            return False
        return not any(k.casefold() in folded for k in self.exclude)


@dataclass(frozen=True)
class Seen:
    """What the database holds of one monitor once the service is gone."""

    polls: list[PollRecord]
    events: list[ListingEventRecord]
    listings: dict[int, ListingRecord]

    @property
    def bootstrap(self) -> PollRecord:
        return min((p for p in self.polls if p.error is None), key=lambda p: p.started_at)

    def first_seen_after_bootstrap(self) -> dict[int, Decimal | None]:
        """item_id -> its price at first sight, for listings first seen after the bootstrap."""
        boot = self.bootstrap.id
        return {e.item_id: e.price for e in self.events if e.kind == "new" and e.poll_id != boot}

    def first_seen_in_polls_after(self, polls: int) -> set[int]:
        """Listings first seen in a successful poll after the first `polls` successful ones."""
        ok = sorted((p for p in self.polls if p.error is None), key=lambda p: p.started_at)
        later = {p.id for p in ok[polls:]}
        return {e.item_id for e in self.events if e.kind == "new" and e.poll_id in later}

    def price_drops(self) -> dict[int, Decimal]:
        """item_id -> the price after its first drop (a `price` event below the one before)."""
        last: dict[int, Decimal | None] = {}
        drops: dict[int, Decimal] = {}
        for event in sorted(self.events, key=lambda e: e.id):
            if event.kind == "new":
                last[event.item_id] = event.price
            elif event.kind == "price" and event.price is not None:
                before = last.get(event.item_id)
                if before is not None and event.price < before:
                    drops.setdefault(event.item_id, event.price)
                last[event.item_id] = event.price
        return drops

    def rises(self) -> set[int]:
        """Listings whose price went up at some poll (they must never alert a drop for it)."""
        last: dict[int, Decimal | None] = {}
        up: set[int] = set()
        for event in sorted(self.events, key=lambda e: e.id):
            if event.kind not in ("new", "price"):
                continue
            before = last.get(event.item_id)
            if event.kind == "price" and before is not None and (event.price or 0) > before:
                up.add(event.item_id)
            last[event.item_id] = event.price
        return up


async def load_seen(store: Store, monitor_id: str) -> Seen:
    polls = [p async for p in store.monitors.iter_polls(monitor_id)]
    events = [e async for e in store.monitors.iter_events(monitor_id)]
    listings = {r.item_id: r async for r in store.monitors.iter_listings(monitor_id)}
    return Seen(polls, events, listings)


def selected(want: Want, seen: Seen) -> set[Selected]:
    """What `want` should have alerted on, from the database's record (see the module doc)."""
    chosen: set[Selected] = set()
    if "new_listing" in want.kinds:
        for item_id, price in seen.first_seen_after_bootstrap().items():
            row = seen.listings[item_id]
            if want.passes(row.title, row.brand, price):
                chosen.add((item_id, "new_listing"))
    if "price_drop" in want.kinds:
        for item_id, price in seen.price_drops().items():
            row = seen.listings[item_id]
            if want.passes(row.title, row.brand, price):
                chosen.add((item_id, "price_drop"))
    return chosen


def duplicates(alerts: list[Selected]) -> dict[Selected, int]:
    """The alerts that arrived more than once, with how many times."""
    counts: dict[Selected, int] = defaultdict(int)
    for alert in alerts:
        counts[alert] += 1
    return {alert: n for alert, n in counts.items() if n > 1}
