"""A listing's description stored once per site (#31): `listings` becomes two tables and a
view of them.

Revision ID: l001
Revises: w001
Create Date: 2026-11-28 00:00:00.000000

- `site_listings` (site, item id): what the listing is (title, brand, size, condition,
  seller, links, when it was published), however many monitors see it.
- `monitor_listings` (monitor, item id): what one monitor saw and decided of it (first and
  last seen, state, evidence, absences, feed place, and the fields its state machine compares
  from poll to poll: price, favourites, category, promoted), with the monitor's site.
- the view `listings` joins them, with the columns of the old table in the old order, so
  every reader (the listings page reads `SELECT *` by position, exports, analyses) reads what
  it read before.

The copy keeps every row of every monitor as it was. Where several monitors of one site held
the same listing, the description of the most recent sighting is kept (the latest
`last_seen_at`, then the lowest monitor id): before this revision each monitor kept the
description of its own latest sighting. Runs in SQL whatever the number of listings: only
the monitors' sites (one per monitor) are worked out in Python, as the price book's `site_of`
does, into a scratch table.

After p001, whose backfill read the old table (it reads the view as well).
A migration that changes `monitor_listings` or `site_listings` drops the view first and makes
it again after (SQLite's batch mode copies the table, which a view on it would stop).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import sqlalchemy as sa
from alembic import op

from store._db.base import UtcDateTime

revision = "l001"
down_revision = "w001"
branch_labels = None
depends_on = ("p001",)

# The old table's columns in its order, each with the table it now lives in.
_SITE = "site"
_MONITOR = "monitor"
_COLUMNS = (
    ("monitor_id", _MONITOR), ("item_id", _MONITOR), ("title", _SITE), ("brand", _SITE),
    ("size", _SITE), ("condition", _SITE), ("category_id", _MONITOR), ("price", _MONITOR),
    ("currency", _SITE), ("favourites", _MONITOR), ("views", _MONITOR), ("seller_id", _SITE),
    ("url", _SITE), ("photo_url", _SITE), ("listed_at", _SITE), ("first_seen_at", _MONITOR),
    ("last_seen_at", _MONITOR), ("state", _MONITOR), ("state_changed_at", _MONITOR),
    ("in_feed", _MONITOR), ("condition_raw", _SITE), ("category_name", _MONITOR),
    ("total_price", _MONITOR), ("service_fee", _MONITOR), ("promoted", _MONITOR),
    ("state_evidence", _MONITOR), ("absent_polls", _MONITOR), ("seller_login", _SITE),
    ("seller_business", _SITE), ("feed_rank", _MONITOR),
)  # fmt: skip
_MONITOR_COLUMNS = [name for name, side in _COLUMNS if side == _MONITOR]
_SITE_COLUMNS = [name for name, side in _COLUMNS if side == _SITE]

VIEW = (
    "CREATE VIEW listings AS SELECT "
    + ", ".join(f"{'m' if side == _MONITOR else 's'}.{name}" for name, side in _COLUMNS)
    + " FROM monitor_listings m LEFT JOIN site_listings s"
    " ON s.site = m.site AND s.item_id = m.item_id"
)


def _site(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme}://{parts.netloc}".lower()


def _tables() -> None:
    op.create_table(
        "site_listings",
        sa.Column("site", sa.String(300), primary_key=True),
        sa.Column("item_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("described_at", UtcDateTime(), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("brand", sa.String(200), nullable=True),
        sa.Column("size", sa.String(100), nullable=True),
        sa.Column("condition", sa.String(100), nullable=True),
        sa.Column("condition_raw", sa.String(100), nullable=True),
        sa.Column("currency", sa.String(8), nullable=True),
        sa.Column("seller_id", sa.BigInteger(), nullable=True),
        sa.Column("seller_login", sa.String(200), nullable=True),
        sa.Column("seller_business", sa.Boolean(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("photo_url", sa.Text(), nullable=True),
        sa.Column("listed_at", UtcDateTime(), nullable=True),
    )
    op.create_table(
        "monitor_listings",
        sa.Column(
            "monitor_id",
            sa.String(40),
            sa.ForeignKey("monitors.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("item_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("site", sa.String(300), nullable=False),
        sa.Column("first_seen_at", UtcDateTime(), nullable=False),
        sa.Column("last_seen_at", UtcDateTime(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("state_changed_at", UtcDateTime(), nullable=False),
        sa.Column("state_evidence", sa.String(16), nullable=True),
        sa.Column("absent_polls", sa.Integer(), nullable=False),
        sa.Column("in_feed", sa.Boolean(), nullable=False),
        sa.Column("feed_rank", sa.BigInteger(), nullable=True),
        sa.Column("promoted", sa.Boolean(), nullable=False),
        sa.Column("price", sa.Numeric(12, 2), nullable=True),
        sa.Column("total_price", sa.Numeric(12, 2), nullable=True),
        sa.Column("service_fee", sa.Numeric(12, 2), nullable=True),
        sa.Column("favourites", sa.Integer(), nullable=True),
        sa.Column("views", sa.Integer(), nullable=True),
        sa.Column("category_id", sa.Integer(), nullable=True),
        sa.Column("category_name", sa.String(200), nullable=True),
    )
    op.create_index(
        "ix_monitor_listings_state", "monitor_listings", ["monitor_id", "state", "item_id"]
    )
    op.create_index("ix_monitor_listings_rank", "monitor_listings", ["monitor_id", "feed_rank"])


def _monitor_sites(connection: sa.Connection) -> None:
    """The scratch table `l001_monitor_sites`: each monitor's site."""
    op.create_table(
        "l001_monitor_sites",
        sa.Column("monitor_id", sa.String(40), primary_key=True),
        sa.Column("site", sa.String(300), nullable=False),
    )
    monitors = connection.execute(sa.text("SELECT id, url FROM monitors")).all()
    rows = [{"monitor_id": m, "site": _site(url)} for m, url in monitors]
    sites = sa.table("l001_monitor_sites", sa.column("monitor_id"), sa.column("site"))
    for start in range(0, len(rows), 500):
        connection.execute(sa.insert(sites), rows[start : start + 500])


def upgrade() -> None:
    connection = op.get_bind()
    _tables()
    _monitor_sites(connection)
    # Every monitor's rows as they were (a row of a monitor no longer there is dropped: it
    # was shown nowhere).
    monitor_columns = ", ".join(_MONITOR_COLUMNS)
    op.execute(
        f"INSERT INTO monitor_listings (site, {monitor_columns}) "
        f"SELECT ms.site, {', '.join('l.' + c for c in _MONITOR_COLUMNS)} "
        "FROM listings l JOIN l001_monitor_sites ms ON ms.monitor_id = l.monitor_id"
    )
    # One description per (site, item id): the most recent sighting's.
    site_columns = ", ".join(_SITE_COLUMNS)
    described = ", ".join("l." + c for c in _SITE_COLUMNS)
    op.execute(
        f"INSERT INTO site_listings (site, item_id, described_at, {site_columns}) "
        f"SELECT site, item_id, last_seen_at, {site_columns} FROM ("
        f"  SELECT ms.site, l.item_id, l.last_seen_at, {described},"
        "   row_number() OVER (PARTITION BY ms.site, l.item_id"
        "                      ORDER BY l.last_seen_at DESC, l.monitor_id) AS nth"
        "  FROM listings l JOIN l001_monitor_sites ms ON ms.monitor_id = l.monitor_id"
        ") described WHERE nth = 1"
    )
    op.drop_table("l001_monitor_sites")
    op.drop_index("ix_listings_monitor_rank", table_name="listings")
    op.drop_index("ix_listings_monitor_state", table_name="listings")
    op.drop_table("listings")
    op.execute(VIEW)


def downgrade() -> None:
    op.execute("DROP VIEW listings")
    op.create_table(
        "listings_l001",
        sa.Column(
            "monitor_id",
            sa.String(40),
            sa.ForeignKey("monitors.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("item_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("brand", sa.String(200), nullable=True),
        sa.Column("size", sa.String(100), nullable=True),
        sa.Column("condition", sa.String(100), nullable=True),
        sa.Column("category_id", sa.Integer(), nullable=True),
        sa.Column("price", sa.Numeric(12, 2), nullable=True),
        sa.Column("currency", sa.String(8), nullable=True),
        sa.Column("favourites", sa.Integer(), nullable=True),
        sa.Column("views", sa.Integer(), nullable=True),
        sa.Column("seller_id", sa.BigInteger(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("photo_url", sa.Text(), nullable=True),
        sa.Column("listed_at", UtcDateTime(), nullable=True),
        sa.Column("first_seen_at", UtcDateTime(), nullable=False),
        sa.Column("last_seen_at", UtcDateTime(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("state_changed_at", UtcDateTime(), nullable=False),
        sa.Column("in_feed", sa.Boolean(), nullable=False),
        sa.Column("condition_raw", sa.String(100), nullable=True),
        sa.Column("category_name", sa.String(200), nullable=True),
        sa.Column("total_price", sa.Numeric(12, 2), nullable=True),
        sa.Column("service_fee", sa.Numeric(12, 2), nullable=True),
        sa.Column("promoted", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("state_evidence", sa.String(16), nullable=True),
        sa.Column("absent_polls", sa.Integer(), server_default="0", nullable=False),
        sa.Column("seller_login", sa.String(200), nullable=True),
        sa.Column("seller_business", sa.Boolean(), nullable=True),
        sa.Column("feed_rank", sa.BigInteger(), nullable=True),
    )
    columns = ", ".join(name for name, _ in _COLUMNS)
    chosen = ", ".join(f"{'m' if side == _MONITOR else 's'}.{name}" for name, side in _COLUMNS)
    op.execute(
        f"INSERT INTO listings_l001 ({columns}) SELECT {chosen} FROM monitor_listings m "
        "LEFT JOIN site_listings s ON s.site = m.site AND s.item_id = m.item_id"
    )
    op.drop_index("ix_monitor_listings_rank", table_name="monitor_listings")
    op.drop_index("ix_monitor_listings_state", table_name="monitor_listings")
    op.drop_table("monitor_listings")
    op.drop_table("site_listings")
    op.rename_table("listings_l001", "listings")
    op.create_index("ix_listings_monitor_state", "listings", ["monitor_id", "state", "item_id"])
    op.create_index("ix_listings_monitor_rank", "listings", ["monitor_id", "feed_rank"])
