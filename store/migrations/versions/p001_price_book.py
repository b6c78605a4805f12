"""The price book: `market_sales`, every recorded sale of a site once per (site, item id),
and `buying_costs`, what a workspace pays on top of a purchase; filled from the sold listings
already held.

Revision ID: p001
Revises: 0006
Create Date: 2026-12-03 09:00:00.000000

A branch of its own (see `store/_db/migrate.py`): it needs the listings' evidence and category
names, which 0006 added. The backfill reads every sold listing with its monitor's URL (the
site is the URL's origin) and keeps one sale per (site, item id), several monitors having
seen the same sale: a confirmed one over a likely one, then the earliest. Days to sell are
from when the listing was published (or first seen) to when its sale was recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa
from alembic import op

from store._db.base import UtcDateTime

revision = "p001"
down_revision = "0006"
branch_labels = None
depends_on = None

CHUNK = 200  # rows per INSERT: SQLite caps bound parameters per statement

_monitors = sa.table("monitors", sa.column("id", sa.String()), sa.column("url", sa.Text()))
_listings = sa.table(
    "listings",
    *(sa.column(name, sa.String()) for name in ("monitor_id", "brand", "size", "condition")),
    *(sa.column(name, sa.String()) for name in ("category_name", "currency", "state")),
    sa.column("state_evidence", sa.String()),
    sa.column("item_id", sa.BigInteger()),
    sa.column("category_id", sa.Integer()),
    sa.column("price", sa.Numeric(12, 2)),
    *(sa.column(name, UtcDateTime()) for name in ("listed_at", "first_seen_at")),
    sa.column("state_changed_at", UtcDateTime()),
)

# Typed, so that values are stored as the models store them (SQLite keeps dates as text,
# compared as text).
_SALES = sa.table(
    "market_sales",
    sa.column("site", sa.String()),
    sa.column("item_id", sa.BigInteger()),
    sa.column("category_id", sa.Integer()),
    *(sa.column(name, sa.String()) for name in ("category_name", "brand", "size", "condition")),
    sa.column("price", sa.Numeric(12, 2)),
    sa.column("currency", sa.String()),
    sa.column("days_to_sell", sa.Float()),
    sa.column("evidence", sa.String()),
    sa.column("sold_at", UtcDateTime()),
)


def _tables() -> None:
    op.create_table(
        "market_sales",
        sa.Column("site", sa.String(300), primary_key=True),
        sa.Column("item_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("category_id", sa.Integer(), nullable=True),
        sa.Column("category_name", sa.String(200), nullable=True),
        sa.Column("brand", sa.String(200), nullable=True),
        sa.Column("size", sa.String(100), nullable=True),
        sa.Column("condition", sa.String(100), nullable=True),
        sa.Column("price", sa.Numeric(12, 2), nullable=True),
        sa.Column("currency", sa.String(8), nullable=True),
        sa.Column("days_to_sell", sa.Float(), nullable=True),
        sa.Column("evidence", sa.String(16), nullable=False),
        sa.Column("sold_at", UtcDateTime(), nullable=False),
    )
    op.create_index(
        "ix_market_sales_niche",
        "market_sales",
        ["site", "category_id", "brand", "size", "condition", "sold_at"],
    )
    op.create_table(
        "buying_costs",
        sa.Column(
            "workspace_id",
            sa.String(40),
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("shipping", sa.Numeric(12, 2), nullable=False),
        sa.Column("packaging", sa.Numeric(12, 2), nullable=False),
        sa.Column("margin", sa.Numeric(4, 3), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
    )


def _site(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme}://{parts.netloc}".lower()


def _sold(connection: sa.Connection) -> Iterator[dict[str, Any]]:
    """Every sold listing as a `market_sales` row (duplicates across monitors included)."""
    query = (
        sa.select(_monitors.c.url, _listings)
        .join_from(_listings, _monitors, _monitors.c.id == _listings.c.monitor_id)
        .where(_listings.c.state == "sold")
    )
    for row in connection.execute(query):
        listed: datetime | None = row.listed_at or row.first_seen_at
        sold: datetime = row.state_changed_at
        days = None if listed is None else max(0.0, (sold - listed).total_seconds() / 86400)
        yield {
            "site": _site(row.url), "item_id": row.item_id, "category_id": row.category_id,
            "category_name": row.category_name, "brand": row.brand, "size": row.size,
            "condition": row.condition, "price": row.price, "currency": row.currency,
            "days_to_sell": days, "sold_at": sold,
            "evidence": "likely" if row.state_evidence == "absence" else "confirmed",
        }  # fmt: skip


def _better(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """One sale seen by several monitors: the confirmed record, then the earliest."""
    return (new["evidence"] != "confirmed", new["sold_at"]) < (
        old["evidence"] != "confirmed",
        old["sold_at"],
    )


def upgrade() -> None:
    _tables()
    connection = op.get_bind()
    kept: dict[tuple[str, int], dict[str, Any]] = {}
    for sale in _sold(connection):
        key = (sale["site"], sale["item_id"])
        if key not in kept or _better(sale, kept[key]):
            kept[key] = sale
    rows = list(kept.values())
    for start in range(0, len(rows), CHUNK):
        connection.execute(sa.insert(_SALES), rows[start : start + CHUNK])


def downgrade() -> None:
    op.drop_table("buying_costs")
    op.drop_index("ix_market_sales_niche", table_name="market_sales")
    op.drop_table("market_sales")
