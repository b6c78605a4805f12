"""Result records: frozen, JSON-ready through `to_json()` (NaN never leaks: it is None)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal

Evidence = Literal["snapshot", "history"]
NicheLevel = Literal["exact", "brand", "category"]
AlertKind = Literal["deal", "sell_through_jump", "new_hot_niche"]
Number = float | int | None


@dataclass(frozen=True, slots=True)
class NicheKey:
    """(category, brand, size, condition). `level` says which parts are meaningful:
    "exact" all four, "brand" category and brand (size/condition are None: the residual of
    sparse sizes and conditions), "category" the category only. None inside a meaningful
    part means the listings did not say (unknown brand, say). `category_name` is what the
    marketplace calls the category (a path such as "Men › Shoes › Sneakers"), when a source
    named it; `backoff` says why a coarser niche holds these listings rather than exact ones."""

    level: NicheLevel
    category_id: int | None
    brand: str | None = None
    size: str | None = None
    condition: str | None = None
    category_name: str | None = None
    backoff: str | None = None

    @property
    def category_label(self) -> str | None:
        if self.category_name:
            return self.category_name
        return None if self.category_id is None else f"category {self.category_id}"

    @property
    def label(self) -> str:
        """The niche in words, most general first: "Men › Shoes › Sneakers · Uniqlo · size 43
        · Very good"; a brand-level niche ends "other sizes and conditions", a category-level
        one "mixed brands"."""
        parts = [self.category_label or "Any category"]
        if self.level in ("exact", "brand"):
            parts.append(self.brand or "no brand given")
        if self.level == "exact":
            parts.append(f"size {self.size}" if self.size else "no size given")
            parts.append(self.condition or "condition not given")
        elif self.level == "brand":
            parts.append("sizes and conditions mixed")
        else:
            parts.append("brands mixed")
        return " · ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "category_id": self.category_id,
            "category_name": self.category_name,
            "brand": self.brand,
            "size": self.size,
            "condition": self.condition,
            "label": self.label,
            "backoff": self.backoff,
        }


@dataclass(frozen=True, slots=True)
class PriceSummary:
    """Quantiles of a price distribution (linear interpolation); all None when n == 0."""

    n: int
    median: float | None
    q1: float | None
    q3: float | None
    p10: float | None
    p90: float | None

    @property
    def iqr(self) -> float | None:
        return None if self.q1 is None or self.q3 is None else self.q3 - self.q1

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "median": self.median,
            "q1": self.q1,
            "q3": self.q3,
            "iqr": self.iqr,
            "p10": self.p10,
            "p90": self.p90,
        }


@dataclass(frozen=True, slots=True)
class KMCurve:
    """Kaplan-Meier survival: share still unsold after `days[i]` days is `survival[i]`.
    Starts at (0, 1.0); steps at each sale time (thinned to at most ~200 steps)."""

    days: tuple[float, ...]
    survival: tuple[float, ...]
    at_risk: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "days": list(self.days),
            "survival": list(self.survival),
            "at_risk": list(self.at_risk),
        }


@dataclass(frozen=True, slots=True)
class Trend:
    """Sales in the recent half of the window vs the half before; ratio None if before == 0.
    `direction` is the ratio in a word ("rising", "falling", "steady"), None when too few
    sales to tell."""

    recent_sold: int
    previous_sold: int
    ratio: float | None
    direction: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "recent_sold": self.recent_sold,
            "previous_sold": self.previous_sold,
            "ratio": self.ratio,
            "direction": self.direction,
        }


_SYMBOLS = {"EUR": "€", "GBP": "£", "USD": "$"}


def money(amount: float, currency: str | None) -> str:
    """12.5, EUR -> "€12.50"; unknown or mixed currencies -> "12.50"."""
    symbol = _SYMBOLS.get(currency or "")
    if symbol:
        return f"{symbol}{amount:,.2f}"
    return f"{amount:,.2f} {currency}" if currency else f"{amount:,.2f}"


@dataclass(frozen=True, slots=True)
class ScoreParts:
    """What a history score is made of (module doc of `_analyse`): each figure raw and after
    shrinkage towards the parent niche's, the parent's own figures, and (`explanation`) the
    sentence a reseller reads."""

    score: float
    sell_through: float | None
    sell_through_shrunk: float | None
    sell_through_low: float | None
    price: float | None
    price_shrunk: float | None
    days: float | None
    days_from: str  # "kaplan_meier": the niche's median days to sell; "window": not reached
    days_shrunk: float | None
    parent_label: str | None
    parent_sell_through: float | None
    parent_price: float | None
    parent_days: float | None
    prior_weight: int
    currency: str | None = None

    @property
    def explanation(self) -> str:
        low, price, days = self.sell_through_low, self.price_shrunk, self.days_shrunk
        if low is None or price is None or days is None or self.score <= 0:
            return "No sale observed in this niche yet: its score is 0."
        return (
            f"{low:.0%} chance to sell at the least (95% lower bound) × "
            f"{money(price, self.currency)} typical sold price ÷ {max(1.0, days):.1f} days to "
            f"sell = {money(self.score, self.currency)} per listing-day"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "sell_through": self.sell_through,
            "sell_through_shrunk": self.sell_through_shrunk,
            "sell_through_low": self.sell_through_low,
            "price": self.price,
            "price_shrunk": self.price_shrunk,
            "days": self.days,
            "days_from": self.days_from,
            "days_shrunk": self.days_shrunk,
            "parent": None
            if self.parent_label is None
            else {
                "label": self.parent_label,
                "sell_through": self.parent_sell_through,
                "price": self.parent_price,
                "days": self.parent_days,
            },
            "prior_weight": self.prior_weight,
            "explanation": self.explanation,
        }


@dataclass(frozen=True, slots=True)
class NicheStats:
    """Everything measured about one niche over the window (see `analyse` for definitions)."""

    rank: int
    key: NicheKey
    support: int
    supply: int
    sold: int
    reserved: int
    deleted: int
    supply_previous: int
    sell_through: float | None
    sell_through_low: float | None
    sell_through_high: float | None
    sell_through_recent: float | None
    sell_through_previous: float | None
    ask_price: PriceSummary
    sold_price: PriceSummary
    km_median_days: float | None
    km_curve: KMCurve | None
    demand_velocity: float | None
    favourites: int
    listing_days: float
    trend: Trend | None
    hot: bool
    score: float
    score_kind: Literal["profit_per_listing_day", "demand_proxy"]
    sold_confirmed: int = 0
    sold_likely: int = 0
    km_median_low: float | None = None  # 95% interval of the median days to sell
    km_median_high: float | None = None
    days_note: str | None = None  # why days to sell are withheld or uncertain
    score_parts: ScoreParts | None = None
    hot_reason: str | None = None

    @property
    def label(self) -> str:
        return self.key.label

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "niche": self.key.to_json(),
            "support": self.support,
            "supply": self.supply,
            "sold": self.sold,
            "reserved": self.reserved,
            "deleted": self.deleted,
            "supply_previous": self.supply_previous,
            "sell_through": self.sell_through,
            "sell_through_low": self.sell_through_low,
            "sell_through_high": self.sell_through_high,
            "sell_through_recent": self.sell_through_recent,
            "sell_through_previous": self.sell_through_previous,
            "ask_price": self.ask_price.to_json(),
            "sold_price": self.sold_price.to_json(),
            "km_median_days": self.km_median_days,
            "km_curve": None if self.km_curve is None else self.km_curve.to_json(),
            "demand_velocity": self.demand_velocity,
            "favourites": self.favourites,
            "listing_days": self.listing_days,
            "trend": None if self.trend is None else self.trend.to_json(),
            "hot": self.hot,
            "score": self.score,
            "score_kind": self.score_kind,
            "sold_confirmed": self.sold_confirmed,
            "sold_likely": self.sold_likely,
            "km_median_low": self.km_median_low,
            "km_median_high": self.km_median_high,
            "days_note": self.days_note,
            "score_parts": None if self.score_parts is None else self.score_parts.to_json(),
            "hot_reason": self.hot_reason,
        }


@dataclass(frozen=True, slots=True)
class Alert:
    """One alert: what, where, why (one line with the numbers) and the numbers themselves."""

    kind: AlertKind
    niche: NicheKey
    item_id: int | None
    reason: str
    figures: Mapping[str, Number] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "figures", MappingProxyType(dict(self.figures)))

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "niche": self.niche.to_json(),
            "item_id": self.item_id,
            "reason": self.reason,
            "figures": dict(self.figures),
        }


@dataclass(frozen=True, slots=True)
class FlowDay:
    """Market flow on one UTC day: listings first seen, sold, deleted."""

    date: str
    new: int
    sold: int
    deleted: int


@dataclass(frozen=True, slots=True)
class Window:
    start: datetime
    end: datetime
    days: float
    midpoint: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "days": self.days,
            "midpoint": self.midpoint.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class Gap:
    """A stretch of the window with no successful poll: nothing was observed in it."""

    start: datetime
    end: datetime
    why: str  # "no polls (service down or paused)", "blocked", "errors", ...

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "hours": round((self.end - self.start).total_seconds() / 3600, 2),
            "why": self.why,
        }


@dataclass(frozen=True, slots=True)
class Coverage:
    """How well a monitor's polls covered the window: what every figure rests on."""

    clock: str  # "market", "service" or "mixed": whose clock stamped the observations
    start: datetime
    end: datetime
    polls_ok: int
    polls_failed: int
    suspected_blocks: int
    typical_interval_hours: float | None
    gaps: tuple[Gap, ...]
    listings_age_known: int  # listed while watched, or a listing date consistent with it
    listings_age_unknown: int  # already on sale at first sight, age unknown

    def to_json(self) -> dict[str, Any]:
        return {
            "clock": self.clock,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "days": round((self.end - self.start).total_seconds() / 86400, 3),
            "polls_ok": self.polls_ok,
            "polls_failed": self.polls_failed,
            "suspected_blocks": self.suspected_blocks,
            "typical_interval_hours": self.typical_interval_hours,
            "gaps": [g.to_json() for g in self.gaps],
            "listings_age_known": self.listings_age_known,
            "listings_age_unknown": self.listings_age_unknown,
        }


@dataclass(frozen=True, slots=True)
class AnalysisResult:
    """A finished analysis: niches best first, alerts, market flow, counts and notes."""

    evidence: Evidence
    window: Window
    generated_at: datetime
    niches: Sequence[NicheStats]  # best first; a read-only NicheTable from `analyse`
    alerts: tuple[Alert, ...]
    flow: tuple[FlowDay, ...]
    counts: Mapping[str, int]
    notes: tuple[str, ...]
    top_n: int
    min_support: int
    source: str = "records"
    include_likely_sales: bool = False  # likely sales (by absence) ranked as sales
    coverage: Coverage | None = None  # a monitor's polls over the window (None: a scrape)
    currency: str | None = None  # the prices' currency when they share one

    def __post_init__(self) -> None:
        object.__setattr__(self, "counts", MappingProxyType(dict(self.counts)))

    @property
    def top(self) -> tuple[NicheStats, ...]:
        return tuple(self.niches[: self.top_n])

    def to_json(self, *, max_niches: int | None = None) -> dict[str, Any]:
        niches = self.niches if max_niches is None else self.niches[:max_niches]
        # to_json builds every record it serialises: pass max_niches for a light payload.
        return {
            "evidence": self.evidence,
            "source": self.source,
            "window": self.window.to_json(),
            "generated_at": self.generated_at.isoformat(),
            "top_n": self.top_n,
            "min_support": self.min_support,
            "include_likely_sales": self.include_likely_sales,
            "currency": self.currency,
            "coverage": None if self.coverage is None else self.coverage.to_json(),
            "counts": dict(self.counts),
            "notes": list(self.notes),
            "niches": [n.to_json() for n in niches],
            "alerts": [a.to_json() for a in self.alerts],
            "flow": [
                {"date": f.date, "new": f.new, "sold": f.sold, "deleted": f.deleted}
                for f in self.flow
            ],
        }
