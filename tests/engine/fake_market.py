"""An in-memory marketplace for engine tests: the marketplace is outside our walls, so a
fake of it is fair; the store under it is the real one."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import trio
import trio.lowlevel

from engine import CatalogueUrlRefused, Feed, OriginReport
from engine.market import FeedWindow, PastedSession, SessionNotTaken
from store import ConfirmedState, ListingState, ObservedListing


class StateLookupFailed(Exception):
    """A state lookup the marketplace did not answer with a state; `kind` is the
    `PollFailureKind` the real adapter gives it ("rate_limited", "blocked", "invalid"...)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


@dataclass
class FakeMarket:
    states: dict[int, ListingState] = field(default_factory=dict)
    prices: dict[int, Decimal] = field(default_factory=dict)
    feed_window: int = 1000  # organic listings per answer: the page cap cuts the rest
    feed_error: Exception | None = None
    feed_calls: int = 0
    detail_calls: int = 0
    gate: trio.Event | None = None
    suspicious: list[str] = field(default_factory=list)
    market_time: datetime | None = None  # what the feed says the market's clock reads
    fields: dict[int, dict[str, Any]] = field(default_factory=dict)  # a listing's own fields
    # What asking about a listing's state raises instead of answering (a 429, a block page,
    # an unreadable page): see `StateLookupFailed`.
    state_errors: dict[int, Exception] = field(default_factory=dict)
    # When each listing was published, the feed's order (newest first); a listing not in it
    # was published in the order of its id. A draft's id is older than its publication.
    published: dict[int, float] = field(default_factory=dict)

    def list(self, item_id: int, price: str = "10.00") -> None:
        self.states[item_id] = "open"
        self.prices[item_id] = Decimal(price)

    async def check_url(self, url: str) -> str:
        if not url.startswith("https://www.vinted.fr/"):
            raise CatalogueUrlRefused(url, "not a marketplace origin")
        return url

    async def fetch_feed(
        self, url: str, page_cap: int, *, fresh_within: float = 0.0, subscriber: str | None = None
    ) -> Feed:
        self.feed_calls += 1
        if self.gate is not None:
            await self.gate.wait()
        await trio.lowlevel.checkpoint()
        if self.feed_error is not None:
            raise self.feed_error
        live = sorted(
            (i for i, s in self.states.items() if s == "open"),
            key=lambda i: (self.published.get(i, i), i),
            reverse=True,
        )
        listings = tuple(
            ObservedListing(
                **{"item_id": i, "price": self.prices[i], "brand": "Levi's", "favourites": 1}
                | self.fields.get(i, {})
            )
            for i in live[: self.feed_window]
        )
        organic = tuple(x.item_id for x in listings if not x.promoted)
        window = FeedWindow(organic, cut=len(live) > self.feed_window)
        return Feed(listings=listings, pages=1, windows=(window,), market_time=self.market_time)

    async def fetch_state(
        self, url: str, item_id: int, *, fresh_within: float = 0.0
    ) -> ConfirmedState:
        self.detail_calls += 1
        await trio.lowlevel.checkpoint()
        if item_id in self.state_errors:
            raise self.state_errors[item_id]
        return ConfirmedState(item_id, self.states.get(item_id, "deleted"), "item_page")

    def failure_kind(self, error: Exception) -> str | None:
        return error.kind if isinstance(error, StateLookupFailed) else None

    def note_suspicious(self, url: str, kind: str) -> None:
        self.suspicious.append(kind)

    def origin_reports(self) -> list[OriginReport]:
        return []  # no sites of its own: the operators' view lists none

    async def take_operator_session(
        self, site: str, cookie_text: str, user_agent: str | None
    ) -> PastedSession:
        raise SessionNotTaken("this node has no marketplace client")
