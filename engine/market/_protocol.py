"""What monitors, runs and operators need from the marketplace, as a protocol the scrapers
adapter fulfils."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from store import ConfirmedState, ObservedListing


@dataclass(frozen=True, slots=True)
class FeedWindow:
    """One newest-first feed as read: its organic (not promoted) listings' ids in the feed's
    order, which is publication order (never id order: ids come with drafts), and whether
    the page cap cut the reading short. `category_id`: the one category it was filtered to,
    when the URL names several (each is a feed, and a window, of its own)."""

    organic: tuple[int, ...]
    cut: bool
    category_id: int | None = None


@dataclass(frozen=True, slots=True)
class Feed:
    listings: tuple[ObservedListing, ...]
    pages: int
    problems: tuple[str, ...] = ()
    # Where each feed read ends (`_feed_window` says what left it). Empty: one window, read
    # to its end, whose organic order is the listings' own.
    windows: tuple[FeedWindow, ...] = ()
    market_time: datetime | None = None  # the marketplace's clock, when the answer stated it


@dataclass(frozen=True, slots=True)
class OriginReport:
    """What operators see of one marketplace site, as this node knows it. `breaker`,
    `blocked_for_seconds` and the block fields are the site's `www` origin's; `api_breaker`
    and `api_blocked_for_seconds` its API origin's (the two are paused apart)."""

    origin: str
    api_origin: str
    profile: str | None  # None: not decided yet (auto, nothing fetched)
    profile_mode: str  # auto, 2026-09 or legacy
    breaker: str
    blocked_for_seconds: float
    last_success_at: datetime | None
    last_block_at: datetime | None
    last_block_kind: str | None
    requests_last_hour: int
    detail_refusals: int
    detail_api_resting: bool
    suspected_blocks: int
    filters_ignored: int
    profile_moves: int
    api_breaker: str
    api_blocked_for_seconds: float
    challenge: str  # "browser session until ...", "operator session until ...", "no session"
    challenges: int  # challenges answered to this node's plain requests
    session_source: str | None
    session_expires_at: datetime | None
    session_error: str | None  # why the last attempt to get a session failed
    without_session_since: datetime | None
    browser: str  # "configured" or "off"
    sources: dict[str, str]  # state source -> available, refusing or unavailable
    egress: str
    egress_rate: float  # requests per second this node may send through the egress
    egress_requests_last_hour: int


class CatalogueUrlRefused(Exception):
    """A user-supplied catalogue URL that must not be fetched (SSRF guard, not the marketplace)."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"catalogue URL refused: {reason}")
        self.url = url
        self.reason = reason


class SuspectedBlock(Exception):
    """A feed that parsed but cannot be believed: empty, or shrunk by more than 80%, where the
    last good poll of the same query saw listings. A block that looks like success."""

    kind = "suspected_block"

    def __init__(self, seen: int, before: int) -> None:
        super().__init__(
            f"the feed shrank from {before} to {seen} listings at once; treated as a block"
        )
        self.seen = seen
        self.before = before


@dataclass(frozen=True, slots=True)
class PastedSession:
    """A marketplace session an operator pasted, as the service took it."""

    site: str
    source: str  # "operator"
    expires_at: datetime | None  # read from the token
    challenge: str  # the site's challenge state now (`OriginReport.challenge`'s words)


class SessionNotTaken(Exception):
    """A pasted session the marketplace would not use; `reason` says why, for the operator."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Marketplace(Protocol):
    async def check_url(self, url: str) -> str:
        """The normalised catalogue URL, or `CatalogueUrlRefused` if it must not be fetched."""
        ...

    async def fetch_feed(
        self,
        url: str,
        page_cap: int,
        *,
        fresh_within: float = 0.0,
        subscriber: str | None = None,
    ) -> Feed:
        """Every listing of the catalogue URL's feed, up to `page_cap` pages.

        `fresh_within`: an answer fetched that many seconds ago or less will do (a sharing
        marketplace gives it to every monitor of the search; the real one always fetches).
        `subscriber`: the monitor asking, for the operators' view of shared feeds.

        Raises an `Exception` (blocked, rate limited, unreachable, malformed, filters ignored)
        when the feed cannot be read or believed; single broken items are skipped and reported
        in `problems`.
        """
        ...

    async def fetch_state(
        self, url: str, item_id: int, *, fresh_within: float = 0.0
    ) -> ConfirmedState:
        """The state of one listing and the evidence for it (the item page, the detail API).
        Raises when no source can tell. `fresh_within` as for `fetch_feed`."""
        ...

    def failure_kind(self, error: Exception) -> str | None:
        """A `PollFailureKind` for an error of `fetch_feed` (None: an ordinary failure)."""
        ...

    def note_suspicious(self, url: str, kind: str) -> None:
        """Count a poll refused as data against the URL's site (the operators' view)."""
        ...

    def origin_reports(self) -> list[OriginReport]:
        """What operators see of each marketplace site this node has talked to, sorted by
        origin (`/api/ops/origins`); empty for a marketplace without sites of its own."""
        ...

    async def take_operator_session(
        self, site: str, cookie_text: str, user_agent: str | None
    ) -> PastedSession:
        """Use the session an operator pasted for `site`, on every node. `SessionNotTaken`
        naming the reason (not a site we may fetch, no token, not a JWT, already expired; a
        marketplace that keeps no sessions of its own)."""
        ...
