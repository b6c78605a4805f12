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
    part means the listings did not say (unknown brand, say)."""

    level: NicheLevel
    category_id: int | None
    brand: str | None = None
    size: str | None = None
    condition: str | None = None

    @property
    def label(self) -> str:
        parts = [f"cat {self.category_id if self.category_id is not None else '?'}"]
        if self.level in ("exact", "brand"):
            parts.append(self.brand or "(no brand)")
        if self.level == "exact":
            parts.append(self.size or "(no size)")
            parts.append(self.condition or "(no condition)")
        else:
            parts.append("(other)" if self.level == "brand" else "(other brands)")
        return " / ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "category_id": self.category_id,
            "brand": self.brand,
            "size": self.size,
            "condition": self.condition,
            "label": self.label,
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
    """Sales in the recent half of the window vs the half before; ratio None if before == 0."""

    recent_sold: int
    previous_sold: int
    ratio: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "recent_sold": self.recent_sold,
            "previous_sold": self.previous_sold,
            "ratio": self.ratio,
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
            "counts": dict(self.counts),
            "notes": list(self.notes),
            "niches": [n.to_json() for n in niches],
            "alerts": [a.to_json() for a in self.alerts],
            "flow": [
                {"date": f.date, "new": f.new, "sold": f.sold, "deleted": f.deleted}
                for f in self.flow
            ],
        }
