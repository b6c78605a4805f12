"""A listing's description stored once per site (#31): `listings` becomes two tables and a
view of them.

Revision ID: l001
Revises: w001
Create Date: 2026-11-28 00:00:00.000000

- `site_listings`: what a listing is (title, brand, size, condition, seller, links, when it
  was published), one row per (site, item id) and distinct content (`digest`), however many
  monitors saw it so.
- `monitor_listings` (monitor, item id): what one monitor saw and decided of it (first and
  last seen, state, evidence, absences, feed place, and the fields its state machine compares
  from poll to poll: price, favourites, views, category, promoted), and the version of the
  description it saw last (`description_id`).
- the view `listings` joins them, with the columns of the old table in the old order, so
  every reader (the listings page reads `SELECT *` by position, exports, analyses) reads
  exactly what it read before.

The copy keeps every row of every monitor as it was, description included: two monitors
that held the same description of a listing share one version, two that held different ones
keep one each. It streams the old rows in (site, item id) order, so it holds one listing's
versions at a time whatever the number of listings; the monitors' sites (one per monitor)
are worked out in Python, as the price book's `site_of` does, into a scratch table. After
p001, whose backfill read the old table (it reads the view as well).

A migration that changes `monitor_listings` or `site_listings` drops the view first and makes
it again after (SQLite's batch mode copies the table, which a view on it would stop).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa
from alembic import op

from store._db.base import UtcDateTime

revision = "l001"
down_revision = "w001"
branch_labels = None
depends_on = ("p001",)

# The old table's columns in its order, with their types and the table each now lives in.
_SITE = "site"
_MONITOR = "monitor"
_TEXT, _INT, _BIG, _BOOL = sa.Text(), sa.Integer(), sa.BigInteger(), sa.Boolean()
_MONEY, _WHEN = sa.Numeric(12, 2), UtcDateTime()
_COLUMNS = (
    ("monitor_id", _TEXT, _MONITOR), ("item_id", _BIG, _MONITOR), ("title", _TEXT, _SITE),
    ("brand", _TEXT, _SITE), ("size", _TEXT, _SITE), ("condition", _TEXT, _SITE),
    ("category_id", _INT, _MONITOR), ("price", _MONEY, _MONITOR), ("currency", _TEXT, _SITE),
    ("favourites", _INT, _MONITOR), ("views", _INT, _MONITOR), ("seller_id", _BIG, _SITE),
    ("url", _TEXT, _SITE), ("photo_url", _TEXT, _SITE), ("listed_at", _WHEN, _SITE),
    ("first_seen_at", _WHEN, _MONITOR), ("last_seen_at", _WHEN, _MONITOR),
    ("state", _TEXT, _MONITOR), ("state_changed_at", _WHEN, _MONITOR),
    ("in_feed", _BOOL, _MONITOR), ("condition_raw", _TEXT, _SITE),
    ("category_name", _TEXT, _MONITOR), ("total_price", _MONEY, _MONITOR),
    ("service_fee", _MONEY, _MONITOR), ("promoted", _BOOL, _MONITOR),
    ("state_evidence", _TEXT, _MONITOR), ("absent_polls", _INT, _MONITOR),
    ("seller_login", _TEXT, _SITE), ("seller_business", _BOOL, _SITE),
    ("feed_rank", _BIG, _MONITOR),
)  # fmt: skip
_MONITOR_COLUMNS = [name for name, _, side in _COLUMNS if side == _MONITOR]
# In the order the application's digest reads them (store/market/site_listings.py).
_DESCRIBED = (
    "title", "brand", "size", "condition", "condition_raw", "currency", "seller_id",
    "seller_login", "seller_business", "url", "photo_url", "listed_at",
)  # fmt: skip
_CHUNK = 500  # rows per executemany

_OLD = sa.table("listings", *(sa.column(name, kind) for name, kind, _ in _COLUMNS))
_NEW_SITE = sa.table(
    "site_listings",
    sa.column("id", _BIG), sa.column("site", _TEXT), sa.column("item_id", _BIG),
    sa.column("digest", _TEXT), *(sa.column(n, k) for n, k, side in _COLUMNS if side == _SITE),
)  # fmt: skip
_NEW_MONITOR = sa.table(
    "monitor_listings",
    sa.column("description_id", _BIG),
    *(sa.column(n, k) for n, k, side in _COLUMNS if side == _MONITOR),
)
_SCRATCH = sa.table("l001_monitor_sites", sa.column("monitor_id"), sa.column("site"))

VIEW = (
    "CREATE VIEW listings AS SELECT "
    + ", ".join(f"{'m' if side == _MONITOR else 's'}.{name}" for name, _, side in _COLUMNS)
    + " FROM monitor_listings m LEFT JOIN site_listings s ON s.id = m.description_id"
)


def _site(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme}://{parts.netloc}".lower()


def _digest(description: dict[str, Any]) -> str:
    """As `store.market.site_listings.digest` computed it when this revision was written."""
    parts = []
    for name in _DESCRIBED:
        value = description[name]
        if isinstance(value, datetime):
            value = value.astimezone(UTC).isoformat()
        parts.append(f"{name}={value!r}")
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=16).hexdigest()


def _tables() -> None:
    op.create_table(
        "site_listings",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("site", sa.String(300), nullable=False),
        sa.Column("item_id", sa.BigInteger(), nullable=False),
        sa.Column("digest", sa.String(32), nullable=False),
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
        sa.UniqueConstraint("site", "item_id", "digest", name="uq_site_listings_version"),
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
        sa.Column(
            "description_id",
            sa.BigInteger(),
            sa.ForeignKey("site_listings.id"),
            nullable=False,
        ),
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
    for start in range(0, len(rows), _CHUNK):
        connection.execute(sa.insert(_SCRATCH), rows[start : start + _CHUNK])


class _Copy:
    """The old rows, in (site, item id) order, into the two tables: one version per distinct
    description of a listing, numbered here (the ids are new)."""

    def __init__(self, connection: sa.Connection) -> None:
        self.connection = connection
        self.sites: list[dict[str, Any]] = []
        self.monitors: list[dict[str, Any]] = []
        self.listing: tuple[str, int] | None = None
        self.versions: dict[str, int] = {}  # the current listing's: digest -> id
        self.last_id = 0

    def add(self, site: str, row: sa.Row[Any]) -> None:
        old = row._mapping
        if self.listing != (site, old["item_id"]):
            self.listing, self.versions = (site, old["item_id"]), {}
        description = {name: old[name] for name in _DESCRIBED}
        digest = _digest(description)
        if digest not in self.versions:
            self.last_id += 1
            self.versions[digest] = self.last_id
            self.sites.append(
                {"id": self.last_id, "site": site, "item_id": old["item_id"], "digest": digest}
                | description
            )
        mine = {name: old[name] for name in _MONITOR_COLUMNS}
        self.monitors.append(mine | {"description_id": self.versions[digest]})
        if len(self.monitors) >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.sites:
            self.connection.execute(sa.insert(_NEW_SITE), self.sites)
        if self.monitors:
            self.connection.execute(sa.insert(_NEW_MONITOR), self.monitors)
        self.sites, self.monitors = [], []


def upgrade() -> None:
    connection = op.get_bind()
    _tables()
    _monitor_sites(connection)
    # Every monitor's rows as they were (a row of a monitor no longer there is dropped: it
    # was shown nowhere), streamed (a server-side cursor on PostgreSQL).
    old = (
        sa.select(_SCRATCH.c.site, _OLD)
        .join_from(_OLD, _SCRATCH, _SCRATCH.c.monitor_id == _OLD.c.monitor_id)
        .order_by(_SCRATCH.c.site, _OLD.c.item_id, _OLD.c.monitor_id)
        .execution_options(stream_results=True, yield_per=_CHUNK)
    )
    copy = _Copy(connection)
    for row in connection.execute(old):
        copy.add(row.site, row)
    copy.flush()
    if connection.dialect.name == "postgresql":  # the ids were given: the sequence follows
        op.execute(
            "SELECT setval(pg_get_serial_sequence('site_listings', 'id'), "
            "coalesce(max(id), 1), max(id) IS NOT NULL) FROM site_listings"
        )
    op.drop_table("l001_monitor_sites")
    op.drop_index("ix_listings_monitor_rank", table_name="listings")
    op.drop_index("ix_listings_monitor_state", table_name="listings")
    op.drop_table("listings")
    op.execute(VIEW)


def downgrade() -> None:
    op.execute("DROP VIEW listings")
    op.create_table(
        "listings",
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
    columns = ", ".join(name for name, _, _ in _COLUMNS)
    chosen = ", ".join(f"{'m' if side == _MONITOR else 's'}.{name}" for name, _, side in _COLUMNS)
    op.execute(
        f"INSERT INTO listings ({columns}) SELECT {chosen} FROM monitor_listings m "
        "LEFT JOIN site_listings s ON s.id = m.description_id"
    )
    op.drop_index("ix_monitor_listings_rank", table_name="monitor_listings")
    op.drop_index("ix_monitor_listings_state", table_name="monitor_listings")
    op.drop_table("monitor_listings")
    op.drop_table("site_listings")
    op.create_index("ix_listings_monitor_state", "listings", ["monitor_id", "state", "item_id"])
    op.create_index("ix_listings_monitor_rank", "listings", ["monitor_id", "feed_rank"])
