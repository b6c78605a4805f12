"""The records of one niche: its key, price summaries, survival curve, trend, score parts, and
`NicheStats` holding them all. Frozen, JSON-ready through `to_json()` (NaN never leaks: it
is None).

Apart from the result-level records (`_result`) because most of the package needs only these
(backoff builds keys, the score its parts, alerts name niches) and the result only gathers them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from engine.money import format_money

NicheLevel = Literal["exact", "brand", "category"]
ScoreKind = Literal["profit_per_listing_day", "demand_proxy"]


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


def pct(share: float) -> str:
    """0.42 -> "42%": a share as the alerts and explanations word it."""
    return f"{100 * share:.0f}%"


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
        typical, score = format_money(price, self.currency), format_money(self.score, self.currency)
        return (
            f"{low:.0%} chance to sell at the least (95% lower bound) × "
            f"{typical} typical sold price ÷ {max(1.0, days):.1f} days to "
            f"sell = {score} per listing-day"
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


# Sell-through, one definition everywhere (the niche's figure and its interval, the score, hot
# niches, the alerts' halves, the pages' "sold / sold + open" column): listings that were
# deleted are out of both counts, since a deletion says neither that a listing sold nor that
# it failed to (sellers delete to relist, or sell elsewhere); reserved ones are out too,
# undecided. Both are counted apart (`deleted`, `reserved`).
SELL_THROUGH_DEFINITION = (
    "Sell-through = sold ÷ (sold + still open), over the window: of the listings that sold or "
    "are still for sale, the share that sold. Deleted and reserved listings are in neither "
    "count; they are shown apart."
)


@dataclass(frozen=True, slots=True)
class NicheStats:
    """Everything measured about one niche over the window (see `analyse` for definitions).

    `sell_through` is `sold / sell_through_base` (`SELL_THROUGH_DEFINITION`); `support`
    counts every listing of the niche in the window, deleted and reserved ones included.
    """

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
    score_kind: ScoreKind
    sold_confirmed: int = 0
    sold_likely: int = 0
    km_median_low: float | None = None  # 95% interval of the median days to sell
    km_median_high: float | None = None
    days_note: str | None = None  # why days to sell are withheld or uncertain
    score_parts: ScoreParts | None = None
    hot_reason: str | None = None
    # What the listings asked when first seen, open, sold or deleted (`_listed_prices`): the
    # top niches only, None beyond them.
    listed_price: PriceSummary | None = None

    @property
    def label(self) -> str:
        return self.key.label

    @property
    def sell_through_base(self) -> int:
        """Sell-through's denominator: sold + still open (deleted and reserved left out)."""
        return self.sold + self.supply

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "niche": self.key.to_json(),
            "support": self.support,
            "supply": self.supply,
            "sold": self.sold,
            "reserved": self.reserved,
            "deleted": self.deleted,
            "sell_through_base": self.sell_through_base,
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
            "listed_price": None if self.listed_price is None else self.listed_price.to_json(),
        }
