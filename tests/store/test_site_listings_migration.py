"""Migration l001 on a database made by the release before it (listings held per monitor):
every monitor's listings read exactly the same through the `listings` view, each distinct
description of a (site, item id) is stored once; and back again. SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from alembic import command

from store._db.migrate import alembic_config, upgrade
from store._db.urls import sync_database_url
from store.monitors.models import Listing
from tests.store.test_price_book_migration import three_monitors

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
BULK = range(100, 700)
# What a monitor's side keeps and what the site's description holds, as the old table had them.
DESCRIBED = ("title", "brand", "size", "condition", "condition_raw", "currency", "seller_id",
             "seller_login", "seller_business", "url", "photo_url", "listed_at")  # fmt: skip


def _listing(monitor_id: str, item_id: int, title: str, seen_hours: int) -> dict[str, Any]:
    return {
        "monitor_id": monitor_id, "item_id": item_id, "title": title, "brand": "Levi's",
        "size": "W32", "condition": "very_good", "category_id": 5, "price": Decimal(20 + item_id),
        "currency": "EUR", "favourites": item_id, "views": 10 * item_id, "seller_id": 70 + item_id,
        "url": f"https://x/items/{item_id}", "photo_url": None, "listed_at": T0,
        "first_seen_at": T0, "last_seen_at": T0 + timedelta(hours=seen_hours), "state": "open",
        "state_changed_at": T0, "in_feed": True, "condition_raw": "Very good",
        "category_name": "Men › Jeans", "total_price": None, "service_fee": None,
        "promoted": monitor_id == "mon_b", "state_evidence": None, "absent_polls": 0,
        "seller_login": f"seller{item_id}", "seller_business": False, "feed_rank": item_id,
    }  # fmt: skip


OLD_LISTINGS = sa.table("listings", *(sa.column(c.name, c.type) for c in Listing.__table__.c))


def _read(db: sa.Connection) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in db.execute(sa.select(OLD_LISTINGS).order_by("monitor_id", "item_id"))]


def test_listings_read_the_same_through_the_view_and_back(empty_database: str) -> None:
    upgrade(empty_database, "w001")
    upgrade(empty_database, "p001")
    engine = sa.create_engine(sync_database_url(empty_database), poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as db:
            three_monitors(db)
            db.execute(
                sa.insert(OLD_LISTINGS),
                [
                    _listing("mon_a", 1, "Levi's 501 (as a last saw it)", 1),
                    _listing("mon_b", 1, "Levi's 501 W32 (seen later by b)", 2),
                    _listing("mon_a", 2, "Jacket", 3),
                    _listing("mon_b", 2, "Jacket", 1),  # the same description as a's
                    _listing("mon_c", 1, "Jeans (another site's item 1)", 0),
                ],
            )
            # Enough rows to cross the copy's batches (and, on PostgreSQL, the server-side
            # cursor's fetches between inserts): two monitors sharing 600 descriptions.
            db.execute(
                sa.insert(OLD_LISTINGS),
                [_listing(m, i, f"Bulk {i}", 1) for m in ("mon_b", "mon_c") for i in BULK],
            )
        with engine.connect() as db:
            before = _read(db)
        upgrade(empty_database, "l001")
        with engine.connect() as db:
            after = _read(db)
            described = db.execute(
                sa.text(
                    "SELECT site, item_id, title FROM site_listings WHERE item_id < 100 "
                    "ORDER BY 1, 2, 3"
                )
            ).all()
            bulk = db.execute(
                sa.text("SELECT site, count(*) FROM site_listings WHERE item_id >= 100 GROUP BY 1")
            ).all()
            kept = db.execute(sa.text("SELECT count(*) FROM monitor_listings")).scalar()
        command.downgrade(alembic_config(empty_database), "w001")
        with engine.connect() as db:
            back = _read(db)
        upgrade(empty_database)  # and every other branch on top of it
        with engine.begin() as db:  # the copy numbered the versions: new ones follow
            db.execute(
                sa.text("INSERT INTO site_listings (site, item_id, digest) VALUES ('s', 9, 'd')")
            )
            newest = db.execute(sa.text("SELECT max(id) FROM site_listings")).scalar()
    finally:
        engine.dispose()
    # One row per distinct description of a (site, item id); the host's case is no other site.
    assert [tuple(r) for r in described] == [
        ("https://www.vinted.de", 1, "Jeans (another site's item 1)"),
        ("https://www.vinted.fr", 1, "Levi's 501 (as a last saw it)"),
        ("https://www.vinted.fr", 1, "Levi's 501 W32 (seen later by b)"),
        ("https://www.vinted.fr", 2, "Jacket"),
    ]
    # The bulk: one description per site and item, b's (fr) and c's (de) apart.
    assert sorted(tuple(r) for r in bulk) == [
        ("https://www.vinted.de", 600), ("https://www.vinted.fr", 600),
    ]  # fmt: skip
    assert kept == 5 + 1200
    assert after == before  # every row as it was, column for column
    assert back == before
    assert newest == 4 + 1200 + 1
