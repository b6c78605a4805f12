"""Result records: frozen, JSON-ready through `to_json()` (NaN never leaks: it is None).

The records of one niche (`NicheStats` and its parts) are in `_niche_records`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal

from ._basis import SalesBasisChoice, SalesEvidence, choose_sales_basis
from ._niche_records import NicheKey, NicheStats

Evidence = Literal["snapshot", "history"]
AlertKind = Literal["deal", "sell_through_jump", "new_hot_niche"]
Number = float | int | None


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
    # Which sales counted, why, and what the caller asked (`_basis`); None: derived from
    # `include_likely_sales` as if the caller had asked for it.
    sales_basis: SalesBasisChoice | None = None
    coverage: Coverage | None = None  # a monitor's polls over the window (None: a scrape)
    currency: str | None = None  # the prices' currency when they share one

    def __post_init__(self) -> None:
        object.__setattr__(self, "counts", MappingProxyType(dict(self.counts)))

    @property
    def sales(self) -> SalesBasisChoice:
        """The sales basis (`sales_basis`, or the one `include_likely_sales` asked for)."""
        if self.sales_basis is not None:
            return self.sales_basis
        likely = self.counts.get("sold_likely", 0)
        return choose_sales_basis(self.include_likely_sales, SalesEvidence(0, likely))

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
            **self.sales.to_json(),
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
