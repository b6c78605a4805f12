"""Migration p001 on a database made before the price book: the sold listings already held
become the price book, one sale per (site, item id) however many monitors saw it (a
confirmed record over a likely one, then the earliest), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from store._db.base import UtcDateTime
from store._db.migrate import upgrade
from store._db.urls import sync_database_url

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _table(name: str, *columns: tuple[str, Any]) -> sa.TableClause:
    return sa.table(name, *(sa.column(column, kind) for column, kind in columns))


WORKSPACES = _table(
    "workspaces", ("id", sa.String()), ("name", sa.String()), ("created_at", UtcDateTime())
)
MONITORS = _table(
    "monitors", *((c, sa.String()) for c in ("id", "workspace_id", "url", "status")),
    *((c, sa.Integer()) for c in ("interval_seconds", "page_cap", "consecutive_errors")),
    *((c, sa.Integer()) for c in ("total_errors", "polls")), ("created_at", UtcDateTime()),
)  # fmt: skip
LISTINGS = _table(
    "listings", *((c, sa.String()) for c in ("monitor_id", "brand", "size", "condition")),
    *((c, sa.String()) for c in ("currency", "state", "state_evidence", "category_name")),
    ("item_id", sa.BigInteger()), ("category_id", sa.Integer()), ("price", sa.Numeric(12, 2)),
    ("in_feed", sa.Boolean()), ("listed_at", UtcDateTime()), ("first_seen_at", UtcDateTime()),
    ("last_seen_at", UtcDateTime()), ("state_changed_at", UtcDateTime()),
)  # fmt: skip


def _monitor(monitor_id: str, url: str) -> dict[str, Any]:
    return {
        "id": monitor_id, "workspace_id": monitor_id.replace("mon", "ws"), "url": url,
        "status": "active", "interval_seconds": 60, "page_cap": 5, "consecutive_errors": 0,
        "total_errors": 0, "polls": 1, "created_at": T0,
    }  # fmt: skip


def _listing(
    monitor_id: str, item_id: int, state: str, evidence: str | None, sold_day: int
) -> dict[str, Any]:
    return {
        "monitor_id": monitor_id, "item_id": item_id, "brand": "Levi's", "size": "W32",
        "condition": "Very good", "currency": "EUR", "state": state, "state_evidence": evidence,
        "category_name": "Men › Jeans", "category_id": 5, "price": Decimal("20.00") + item_id,
        "in_feed": False, "listed_at": None, "first_seen_at": T0, "last_seen_at": T0,
        "state_changed_at": T0 + timedelta(days=sold_day),
    }  # fmt: skip


def three_monitors(db: sa.Connection) -> None:
    """Workspaces ws_a..ws_c and a monitor in each: mon_a and mon_b of one site (the host's
    case differs), mon_c of another."""
    db.execute(
        sa.insert(WORKSPACES), [{"id": f"ws_{i}", "name": "w", "created_at": T0} for i in "abc"]
    )
    db.execute(
        sa.insert(MONITORS),
        [
            _monitor("mon_a", "https://www.vinted.fr/catalog?brand_ids[]=53"),
            _monitor("mon_b", "https://WWW.vinted.fr/catalog?search_text=levis"),
            _monitor("mon_c", "https://www.vinted.de/catalog"),
        ],
    )


def test_the_backfill_keeps_one_sale_per_site_and_item(empty_database: str) -> None:
    upgrade(empty_database, "0006")
    engine = sa.create_engine(sync_database_url(empty_database), poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as db:
            three_monitors(db)
            db.execute(
                sa.insert(LISTINGS),
                [
                    _listing("mon_a", 1, "sold", "absence", 3),  # likely here...
                    _listing("mon_b", 1, "sold", "item_page", 4),  # ...confirmed there
                    _listing("mon_a", 2, "sold", "detail_api", 2),
                    _listing("mon_b", 2, "sold", "detail_api", 1),  # the earlier record
                    _listing("mon_a", 3, "sold", "absence", 5),
                    _listing("mon_a", 4, "open", None, 0),
                    _listing("mon_b", 5, "deleted", "item_page", 2),
                    _listing("mon_c", 1, "sold", "item_page", 6),  # another site's item 1
                ],
            )
        upgrade(empty_database, "p001")
        with engine.connect() as db:
            rows = db.execute(
                sa.text(
                    "SELECT site, item_id, evidence, price, days_to_sell, brand, category_id "
                    "FROM market_sales ORDER BY site, item_id"
                )
            ).all()
    finally:
        engine.dispose()
    assert [tuple(r) for r in rows] == [
        ("https://www.vinted.de", 1, "confirmed", Decimal("21.00"), 6.0, "Levi's", 5),
        ("https://www.vinted.fr", 1, "confirmed", Decimal("21.00"), 4.0, "Levi's", 5),
        ("https://www.vinted.fr", 2, "confirmed", Decimal("22.00"), 1.0, "Levi's", 5),
        ("https://www.vinted.fr", 3, "likely", Decimal("23.00"), 5.0, "Levi's", 5),
    ]
    upgrade(empty_database)  # and every other branch on top of it
