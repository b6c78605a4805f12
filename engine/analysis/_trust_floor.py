"""The trust floor: how much evidence an analysis needs before the dashboard shows it unasked.

A ranking resting on a few hours or a handful of sales changes completely as evidence comes
in, yet it looks as sure of itself as a month's. So the dashboard shows the most recent
analysis that clears the floor, and an analysis below it only with a caveat (`api/analyses/
choice.py`). Its two figures (`EvidenceDepth`) are stored beside each analysis, so the choice
is one query and never reads a document.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard


@dataclass(frozen=True, slots=True)
class EvidenceDepth:
    """What an analysis rests on: days of history (0 for a snapshot: one scrape has none)
    and the sales it counted (by its sales basis: likely sales only when they count)."""

    days: float
    sales: int


@dataclass(frozen=True, slots=True)
class TrustFloor:
    min_days: float
    min_sales: int

    def cleared_by(self, depth: EvidenceDepth) -> bool:
        return depth.days >= self.min_days and depth.sales >= self.min_sales

    @property
    def words(self) -> str:
        """`≥ 7 days of history and ≥ 30 sales`: as pages and answers state the floor."""
        return f"≥ {self.min_days:g} days of history and ≥ {self.min_sales} sales"


# Why these: a week holds one whole weekly cycle (listings and purchases peak on different
# days), and below about 30 sales in the whole window most niches hold one or two, so their
# ranking is mostly the shrinkage towards their parent rather than their own evidence.
TRUST_FLOOR = TrustFloor(min_days=7.0, min_sales=30)


def evidence_depth(document: Mapping[str, Any]) -> EvidenceDepth:
    """The depth of an analysis document (`AnalysisResult.to_json()`, or one stored before):
    its window's days when it has history, and `counts.sold`. A field missing or malformed
    reads as none (0), so a document that cannot say never clears the floor."""
    window, counts = document.get("window"), document.get("counts")
    days = window.get("days") if isinstance(window, Mapping) else None
    sales = counts.get("sold") if isinstance(counts, Mapping) else None
    history = document.get("evidence") == "history"
    return EvidenceDepth(
        days=float(days) if history and _number(days) else 0.0,
        sales=int(sales) if _number(sales) else 0,
    )


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
