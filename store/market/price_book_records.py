"""Records of the price book, in and out of the store: a sale as the market saw it, the
sales of one niche at each back-off level, and a workspace's buying costs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Literal

SaleEvidence = Literal["confirmed", "likely"]
# How far a niche is backed off: all four keys, category x brand, the category alone (as the
# analysis backs off from a sparse niche).
BookLevel = Literal["exact", "brand", "category"]
BOOK_LEVELS: tuple[BookLevel, ...] = ("exact", "brand", "category")
# How much of a niche's history a price rests on: its last `BOOK_SALES` confirmed and as many
# likely sales per level, none older than `BOOK_DAYS` days (a market's prices move).
BOOK_SALES = 50
BOOK_DAYS = 90


@dataclass(frozen=True, slots=True)
class Niche:
    """A niche's four keys; None where the listings did not say (no brand given...)."""

    category_id: int | None
    brand: str | None = None
    size: str | None = None
    condition: str | None = None
    category_name: str | None = None  # what the marketplace calls the category (not a key)

    @property
    def key(self) -> tuple[int | None, str | None, str | None, str | None]:
        return (self.category_id, self.brand, self.size, self.condition)


@dataclass(frozen=True, slots=True)
class MarketSaleRecord:
    """One recorded sale of one listing of a site (`market_sales`)."""

    site: str
    item_id: int
    category_id: int | None
    category_name: str | None
    brand: str | None
    size: str | None
    condition: str | None
    price: Decimal | None
    currency: str | None
    days_to_sell: float | None
    evidence: SaleEvidence
    sold_at: datetime


@dataclass(frozen=True, slots=True)
class NicheSales:
    """The recent sales of one niche of one site at each back-off level, newest first: at
    most `limit` confirmed and `limit` likely ones per level, none older than `since`."""

    site: str
    niche: Niche
    exact: tuple[MarketSaleRecord, ...]
    brand: tuple[MarketSaleRecord, ...]
    category: tuple[MarketSaleRecord, ...]
    since: datetime
    limit: int

    def at(self, level: BookLevel) -> tuple[MarketSaleRecord, ...]:
        return {"exact": self.exact, "brand": self.brand, "category": self.category}[level]


@dataclass(frozen=True, slots=True)
class BuyingCosts:
    """What a workspace pays on top of a purchase, in the currency of the niche's sales:
    shipping and packaging per item, and the share of the resale price kept as margin.
    `custom` is False while the workspace has kept the defaults."""

    shipping: Decimal = Decimal("4.00")
    packaging: Decimal = Decimal("0.50")
    margin: Decimal = Decimal("0.30")
    custom: bool = False
    updated_at: datetime | None = None
