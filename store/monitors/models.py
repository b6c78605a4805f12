"""Tables of monitors: the monitor, every listing it has seen (its own side of it; the
listing's description is the site's, `store/market/models.py`), every event, every poll."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    Numeric,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from .._db.base import Base, UtcDateTime, ViewBase


class Monitor(Base):
    __tablename__ = "monitors"
    __table_args__ = (Index("ix_monitors_workspace", "workspace_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    label: Mapped[str | None] = mapped_column(String(200))
    url: Mapped[str] = mapped_column(Text)
    source_analysis_id: Mapped[str | None] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(16), index=True)
    interval_seconds: Mapped[int] = mapped_column(Integer)
    page_cap: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    bootstrapped_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    last_poll_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    next_poll_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    consecutive_errors: Mapped[int] = mapped_column(Integer, default=0)
    total_errors: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    polls: Mapped[int] = mapped_column(Integer, default=0)
    # Listings per state, kept by `record_poll` (the only writer of `monitor_listings`) so that
    # totals and details cost one row read however many listings the monitor holds.
    open_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    reserved_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    sold_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    deleted_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Cluster mode: the node holding this row's lease, its fencing token (bumped at every
    # claim; a write carrying an older token is refused) and when the lease lapses.
    lease_owner: Mapped[str | None] = mapped_column(String(200), index=True)
    lease_token: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    lease_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # Why the last failed poll was refused (a `PollFailureKind`), cleared by a good poll.
    last_error_kind: Mapped[str | None] = mapped_column(String(32))
    # Of `sold_count`, the listings sold by absence (likely sales), kept like the others.
    likely_sold_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class MonitorListing(Base):
    """One monitor's side of a listing it has seen: when, where in its feed, the state its
    own polls established, and the fields its state machine compares from poll to poll (a
    price drop is a drop from the price this monitor last saw). What the listing is (title,
    seller, photos...) is stored once per site and version, in `site_listings`, which this
    row points at; `Listing` reads both."""

    __tablename__ = "monitor_listings"
    __table_args__ = (
        Index("ix_monitor_listings_state", "monitor_id", "state", "item_id"),
        Index("ix_monitor_listings_rank", "monitor_id", "feed_rank"),
        # Who holds a version of a description: dropped when no monitor does (migration v001).
        Index("ix_monitor_listings_description", "description_id"),
    )

    monitor_id: Mapped[str] = mapped_column(
        ForeignKey("monitors.id", ondelete="CASCADE"), primary_key=True
    )
    item_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    # The version of the site's description this monitor saw last (`site_listings`).
    description_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("site_listings.id"))
    first_seen_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime())
    state: Mapped[str] = mapped_column(String(16))
    state_changed_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # How the current state was established (an `Evidence`); None when first seen in the feed.
    state_evidence: Mapped[str | None] = mapped_column(String(16))
    # Polls in a row whose feed window should have shown this live listing and did not.
    absent_polls: Mapped[int] = mapped_column(Integer, default=0)
    in_feed: Mapped[bool] = mapped_column(Boolean, default=True)
    # The listing's place in the feed's publication order, as the monitor placed it from the
    # feeds it saw (higher is newer; `FeedOrder`). NULL until first seen organically (ids are
    # allotted with drafts: they say nothing of this order).
    feed_rank: Mapped[int | None] = mapped_column(BigInteger)
    promoted: Mapped[bool] = mapped_column(Boolean, default=False)
    price: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    total_price: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    service_fee: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    favourites: Mapped[int | None] = mapped_column(Integer)
    views: Mapped[int | None] = mapped_column(Integer)
    category_id: Mapped[int | None] = mapped_column(Integer)
    category_name: Mapped[str | None] = mapped_column(String(200))


class Listing(ViewBase):
    """A listing as one monitor shows it: its `monitor_listings` row with the site's
    description (`site_listings`), through the `listings` view (migration l001). Read-only:
    `record_poll` writes the two tables. The columns are in the view's order, the old
    table's, which a test holds to this class."""

    __tablename__ = "listings"

    monitor_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    item_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    title: Mapped[str | None] = mapped_column(Text)
    brand: Mapped[str | None] = mapped_column(String(200))
    size: Mapped[str | None] = mapped_column(String(100))
    condition: Mapped[str | None] = mapped_column(String(100))
    category_id: Mapped[int | None] = mapped_column(Integer)
    price: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    currency: Mapped[str | None] = mapped_column(String(8))
    favourites: Mapped[int | None] = mapped_column(Integer)
    views: Mapped[int | None] = mapped_column(Integer)
    seller_id: Mapped[int | None] = mapped_column(BigInteger)
    url: Mapped[str | None] = mapped_column(Text)
    photo_url: Mapped[str | None] = mapped_column(Text)
    listed_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    first_seen_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime())
    state: Mapped[str] = mapped_column(String(16))
    state_changed_at: Mapped[datetime] = mapped_column(UtcDateTime())
    in_feed: Mapped[bool] = mapped_column(Boolean)
    condition_raw: Mapped[str | None] = mapped_column(String(100))
    category_name: Mapped[str | None] = mapped_column(String(200))
    total_price: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    service_fee: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    promoted: Mapped[bool] = mapped_column(Boolean)
    state_evidence: Mapped[str | None] = mapped_column(String(16))
    absent_polls: Mapped[int] = mapped_column(Integer)
    seller_login: Mapped[str | None] = mapped_column(String(200))
    seller_business: Mapped[bool | None] = mapped_column(Boolean)
    feed_rank: Mapped[int | None] = mapped_column(BigInteger)


class ListingEvent(Base):
    """One change of a listing: first seen, state change, price change, counts change."""

    __tablename__ = "listing_events"
    __table_args__ = (Index("ix_listing_events_monitor", "monitor_id", "id"),)

    # SQLite only auto-numbers an INTEGER primary key; PostgreSQL gets a 64-bit one.
    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    monitor_id: Mapped[str] = mapped_column(ForeignKey("monitors.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(BigInteger)
    poll_id: Mapped[str] = mapped_column(String(40))
    kind: Mapped[str] = mapped_column(String(16))
    from_state: Mapped[str | None] = mapped_column(String(16))
    to_state: Mapped[str | None] = mapped_column(String(16))
    price: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    favourites: Mapped[int | None] = mapped_column(Integer)
    views: Mapped[int | None] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    evidence: Mapped[str | None] = mapped_column(String(16))  # state events: an `Evidence`


class Poll(Base):
    __tablename__ = "polls"
    __table_args__ = (Index("ix_polls_monitor", "monitor_id", "started_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    monitor_id: Mapped[str] = mapped_column(ForeignKey("monitors.id", ondelete="CASCADE"))
    started_at: Mapped[datetime] = mapped_column(UtcDateTime())
    finished_at: Mapped[datetime] = mapped_column(UtcDateTime())
    pages: Mapped[int] = mapped_column(Integer)
    items: Mapped[int] = mapped_column(Integer)
    new: Mapped[int] = mapped_column(Integer)
    changed: Mapped[int] = mapped_column(Integer)
    confirmed: Mapped[int] = mapped_column(Integer)
    duration_ms: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    # The market's clock: when the marketplace said this poll looked, and
    # which clock stamped its observations ("market" or "service"; NULL before 0007: service).
    market_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    clock: Mapped[str | None] = mapped_column(String(8))
