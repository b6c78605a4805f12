"""Simulator configuration: the world's seed and pace, its wire profile, and the fault knobs."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

DEFAULT_ROBOTS = "User-agent: *\nDisallow: /member/\nDisallow: /__sim__/\nAllow: /\n"
LEGACY, PROFILE_2026_09 = "legacy", "2026-09"
PROFILES: tuple[str, ...] = (LEGACY, PROFILE_2026_09)
LOCALES: tuple[str, ...] = ("en", "fr", "de", "it", "es", "nl", "pl")


@dataclass(frozen=True, slots=True)
class Faults:
    """Fault knobs. Rates are probabilities per marketplace request (API, catalogue, item page;
    never `/`, robots.txt or `/__sim__/`). `first_*` answer the next N such requests with that
    fault, deterministically, counted from the moment the faults were set."""

    rate_429: float = 0.0
    retry_after: int = 2  # seconds, for every 429 the simulator sends
    retry_after_as_date: bool = False
    rate_403: float = 0.0
    rate_5xx: float = 0.0
    rate_slow: float = 0.0
    slow_seconds: float = 3.0
    rate_truncated: float = 0.0
    ids_as_strings: float = 0.0
    rate_missing_fields: float = 0.0
    client_rate: float = 0.0  # per-client requests per second; 0 = no limit
    client_burst: int = 10
    # Key the client budget by the connection's IP address alone, not by anon id: the real
    # site's budget is per address, shared by every session (and, through a shared
    # `RequestBudget`, by every site) that polls from it.
    budget_per_ip: bool = False
    first_429: int = 0
    first_403: int = 0
    first_5xx: int = 0
    first_truncated: int = 0
    # The detail API refuses one request (403, JSON code 106): today's site does it most of the
    # time. A refusal of one endpoint, not a block page.
    detail_refusal: float = 0.0
    # Blocks that look like success, on catalogue requests (JSON API of either profile and the
    # HTML `/catalog` page): an empty 200, or a 200 that ignores every filter.
    rate_empty: float = 0.0
    first_empty: int = 0
    rate_ignore_filters: float = 0.0
    first_ignore_filters: int = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Faults:
        """Build from a JSON object; `ValueError` naming unknown or mistyped knobs."""
        known = {f.name: f for f in fields(cls)}
        unknown = set(data) - set(known)
        if unknown:
            raise ValueError(f"unknown fault knobs: {sorted(unknown)}")
        values: dict[str, Any] = {}
        for name, value in data.items():
            default = getattr(cls(), name)
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    raise ValueError(f"{name} must be a boolean")
            elif isinstance(default, int):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(f"{name} must be a non-negative integer")
            elif isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{name} must be a non-negative number")
            values[name] = value
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class SimulatorConfig:
    """A seeded synthetic marketplace. Simulated time runs `speed` times faster than the
    server's trio clock, from `start` (a UNIX timestamp) at the moment the app starts.

    `profile` is the wire profile served at start (`legacy`, the library default so existing
    callers see yesterday's site, or `2026-09`); the app can be moved to the other one while it
    runs (`POST /__sim__/profile`). `locale` writes the 2026-09 condition labels,
    `promoted_share` is the fraction of 2026-09 feed positions filled by promoted listings, and
    `item_page_padding` adds that many bytes of script after a 2026-09 item page's JSON-LD.

    Since September 2026 (MARKETPLACE.md): `challenge_www` puts every path of the site origin
    behind a browser challenge (never the API origin, never `/__sim__/`), whose clearance lives
    `clearance_ttl` server seconds; `draft_share` is the fraction of listings published after
    the start whose id was allotted days earlier, with their draft.

    Unknown profiles or locales and out-of-range numbers raise `ValueError` at construction.
    """

    seed: int = 1
    speed: float = 60.0
    n_listings: int = 600  # alive or recently born at start
    arrivals_per_day: float = 120.0
    horizon_days: float = 30.0  # listings are generated for this much simulated time
    start: float = 1_735_689_600.0  # 2025-01-01T00:00:00Z
    # The simulated time the clock shows when the app starts (None: `start`). The world is
    # drawn from `start` either way, so a market served again with its `start` and a later
    # `clock_at` is the same market, continued (the demo's restarts).
    clock_at: float | None = None
    first_id: int = 5_000_000_000  # the first listing id allotted (ids ascend from it)
    token_ttl: float = 600.0  # server seconds (trio clock) a warm-up token lives
    max_pages: int = 20  # the feed's total_pages cap
    html_layout: str = "alternate"  # "A", "B" or "alternate" (per request)
    currency: str = "EUR"
    robots_txt: str = DEFAULT_ROBOTS
    n_hot: int = 3
    n_saturated: int = 3
    # What the market is, as against who lists what in it: which niches are hot or saturated
    # and each niche's median price are drawn from `niche_seed` (None: from `seed`, in the
    # same draw as the listings). Worlds with one niche seed (and the same `n_hot` and
    # `n_saturated`) are one market: the demo's sample month, its live market and the markets
    # renewed after it, whose sales fill one price book.
    niche_seed: int | None = None
    # The market's pace: an ordinary listing priced at its niche's median sells after
    # `sale_days` on average (sooner when cheaper), a hot niche's `hot_speed` times sooner.
    # The defaults are the pace the accuracy tests were measured on; the demo sells slower.
    sale_days: float = 12.0
    hot_speed: float = 6.0
    # The share of new listings that are stale stock: asking too much, they hardly sell, and
    # every niche, a hot one too, keeps some of them on sale (as real catalogues do).
    stale_share: float = 0.0
    # The share of listings whose seller cuts the price (10-25%) when they have not sold
    # after a few days, some of them twice (`_drops`): the feed, item pages and API show the
    # current price, the ground truth the price each sale was made at. Drawn apart from the
    # listings: a world with cuts has the same listings and lives, one without is as it was.
    price_drop_share: float = 0.0
    faults: Faults = field(default_factory=Faults)
    profile: str = LEGACY
    locale: str = "en"
    promoted_share: float = 0.0
    item_page_padding: int = 0
    challenge_www: bool = False
    clearance_ttl: float = 1800.0  # server seconds (trio clock) a challenge's clearance lives
    draft_share: float = 0.0

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(f"profile must be one of {PROFILES}, not {self.profile!r}")
        if self.locale not in LOCALES:
            raise ValueError(f"locale must be one of {LOCALES}, not {self.locale!r}")
        if not 0.0 <= self.promoted_share < 1.0:
            raise ValueError("promoted_share must be in [0, 1)")
        if self.item_page_padding < 0:
            raise ValueError("item_page_padding must be non-negative")
        if not 0.0 <= self.draft_share <= 1.0:
            raise ValueError("draft_share must be in [0, 1]")
        if not self.clearance_ttl > 0:
            raise ValueError("clearance_ttl must be positive")
        if self.first_id <= 0:
            raise ValueError("first_id must be positive")
        if not 0.0 <= self.stale_share < 1.0:
            raise ValueError("stale_share must be in [0, 1)")
        if not 0.0 <= self.price_drop_share <= 1.0:
            raise ValueError("price_drop_share must be in [0, 1]")
        if not (self.sale_days > 0 and self.hot_speed > 0):
            raise ValueError("sale_days and hot_speed must be positive")
