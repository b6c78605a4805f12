"""Tables of the price book: every recorded sale of a marketplace site, once, and what each
workspace pays on top of a purchase (its buying costs)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, Numeric, String
from sqlalchemy.orm import Mapped, mapped_column

from .._db.base import Base, UtcDateTime

_NICHE_COLUMNS = ("site", "category_id", "brand", "size", "condition")


class MarketSale(Base):
    """One sale of one listing of one site (its origin, `https://www.vinted.fr`), whichever
    monitor of whichever workspace recorded it: market data, keyed by the marketplace's own
    id so that two monitors seeing the same sale count it once. No monitor or workspace is
    named here, so nothing read from this table can reveal who watches what."""

    __tablename__ = "market_sales"
    __table_args__ = (
        # Serves the three back-off levels (a prefix each) and the newest-first read.
        Index("ix_market_sales_niche", *_NICHE_COLUMNS, "sold_at"),
    )

    site: Mapped[str] = mapped_column(String(300), primary_key=True)
    item_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    category_id: Mapped[int | None] = mapped_column(Integer)
    category_name: Mapped[str | None] = mapped_column(String(200))
    brand: Mapped[str | None] = mapped_column(String(200))
    size: Mapped[str | None] = mapped_column(String(100))
    condition: Mapped[str | None] = mapped_column(String(100))
    price: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    currency: Mapped[str | None] = mapped_column(String(8))
    days_to_sell: Mapped[float | None] = mapped_column(Float)
    # "confirmed" (a source saw it sold) or "likely" (it left the feed, no source could say).
    evidence: Mapped[str] = mapped_column(String(16))
    sold_at: Mapped[datetime] = mapped_column(UtcDateTime())


class BuyingCostsRow(Base):
    """What a workspace counts on top of a purchase when it asks what to pay: shipping and
    packaging per item, and the share of the resale price it keeps as margin. No row: the
    defaults (`BuyingCosts`)."""

    __tablename__ = "buying_costs"

    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    shipping: Mapped[Decimal] = mapped_column(Numeric(12, 2))
    packaging: Mapped[Decimal] = mapped_column(Numeric(12, 2))
    margin: Mapped[Decimal] = mapped_column(Numeric(4, 3))  # 0.300: 30% of the resale price
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
