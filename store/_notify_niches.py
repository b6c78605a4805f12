"""A listing's niche in one monitor, in figures: what its sales say a fair price is.

Category x brand x size x condition, or the brand within the category when the exact niche
has too few sales (as the analysis backs off). Read inside the poll's transaction, at most
`MAX_NICHES` niches a poll, for the alerts that need them (`_notify_outbox`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ._monitor_models import Listing
from ._notify_rules import confidence

MAX_NICHES = 50  # niches whose figures one poll reads, at most
MIN_DEAL_SALES = 3  # a median of fewer sales says too little to call anything a deal

NicheKey = tuple[int | None, str | None, str | None, str | None]


@dataclass(frozen=True, slots=True)
class NicheFigures:
    label: str
    median_sold_price: Decimal | None
    sold: int
    sell_through: float | None
    median_days_to_sell: float | None

    def as_payload(self) -> dict[str, Any]:
        median = self.median_sold_price
        return {
            "label": self.label,
            "median_sold_price": None if median is None else f"{median:.2f}",
            "sold": self.sold,
            "sell_through": None if self.sell_through is None else round(self.sell_through, 2),
            "median_days_to_sell": self.median_days_to_sell,
            "confidence": confidence(self.sold),
        }


def _key(row: Listing) -> NicheKey:
    return (row.category_id, row.brand, row.size, row.condition)


def niche_figures(
    db: Session, monitor_id: str, row: Listing, *, exact: bool = True
) -> NicheFigures:
    """The figures of `row`'s niche in the monitor: category x brand x size x condition, or
    with `exact=False` category x brand (every size and condition), as the analysis backs
    off from a sparse niche. Sales are confirmed sales only: a likely sale (sold by absence)
    is a guess, and a deal alert should not rest on one."""
    where = [Listing.monitor_id == monitor_id]
    columns = (Listing.category_id, Listing.brand, Listing.size, Listing.condition)
    for column, value in list(zip(columns, _key(row), strict=True))[: 4 if exact else 2]:
        where.append(column.is_(None) if value is None else column == value)
    live = db.scalar(select(func.count()).where(*where, Listing.state.in_(("open", "reserved"))))
    sales = [
        (price, (changed - (listed or seen)).total_seconds() / 86400)
        for price, listed, seen, changed, evidence in db.execute(
            select(
                Listing.price,
                Listing.listed_at,
                Listing.first_seen_at,
                Listing.state_changed_at,
                Listing.state_evidence,
            ).where(*where, Listing.state == "sold")
        )
        if evidence != "absence"
    ]
    prices = [price for price, _ in sales if price is not None]
    sold = len(sales)
    parts = (row.category_name, row.brand, row.size, row.condition)[: 4 if exact else 2]
    label = " · ".join(p for p in parts if p) or "Unnamed niche"
    return NicheFigures(
        label=label if exact else f"{label} · all sizes and conditions",
        median_sold_price=Decimal(statistics.median(prices)).quantize(Decimal("0.01"))
        if prices
        else None,
        sold=sold,
        sell_through=sold / (sold + (live or 0)) if sold + (live or 0) else None,
        median_days_to_sell=round(statistics.median(d for _, d in sales), 1) if sales else None,
    )


class Niches:
    """Figures read once per niche per poll, for at most `MAX_NICHES` niches (a listing of
    a niche past the cap gets no figures: no deal, no confidence, skipped if it needs one)."""

    def __init__(self, db: Session, monitor_id: str) -> None:
        self.db, self.monitor_id = db, monitor_id
        self.read: dict[NicheKey, NicheFigures] = {}

    def of(self, row: Listing) -> NicheFigures | None:
        """The exact niche's figures, or its brand's within the category when the exact
        niche has too few sales to judge a price by (as the analysis backs off)."""
        key = _key(row)
        if key not in self.read:
            if len(self.read) >= MAX_NICHES:
                return None
            figures = niche_figures(self.db, self.monitor_id, row)
            if figures.sold < MIN_DEAL_SALES:
                wider = niche_figures(self.db, self.monitor_id, row, exact=False)
                if wider.sold >= MIN_DEAL_SALES:
                    figures = wider
            self.read[key] = figures
        return self.read[key]
