"""What the service remembers of each marketplace site: which wire profile it speaks, the
session it last handed over (sealed), and what each of its listings is."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .._db.base import Base, UtcDateTime


class MarketProfile(Base):
    """The wire profile (e.g. ``2026-09``) last found to work on one origin; one row per
    origin, shared by every node of a cluster so none probes what another already learnt."""

    __tablename__ = "market_profiles"

    origin: Mapped[str] = mapped_column(String(300), primary_key=True)
    profile: Mapped[str] = mapped_column(String(32))
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class MarketSessionRow(Base):
    """A site's session (cookies, the User-Agent they are bound to), sealed by the engine:
    one row per site, shared by every node so one browser launch serves the cluster and an
    operator's pasted session reaches every node. Never shown back."""

    __tablename__ = "market_sessions"

    site: Mapped[str] = mapped_column(String(300), primary_key=True)
    source: Mapped[str] = mapped_column(String(16))  # warmup, browser or operator
    sealed: Mapped[str] = mapped_column(Text())
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class SiteListing(Base):
    """One description of one listing of a site (what it is: title, brand, size, condition,
    seller, links, when it was published), stored once however many monitors saw it so.
    A listing has a new version only when a sighting says something else of it; each
    monitor points at the version it saw last (`MonitorListing.description_id`), so it shows
    what it saw itself, never what another workspace's monitor saw since. Market data, like
    the price book: it names no workspace. A version no monitor holds any longer is dropped
    (`site_listings.drop_unheld`)."""

    __tablename__ = "site_listings"
    __table_args__ = (
        UniqueConstraint("site", "item_id", "digest", name="uq_site_listings_version"),
    )

    # SQLite only auto-numbers an INTEGER primary key; PostgreSQL gets a 64-bit one.
    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    site: Mapped[str] = mapped_column(String(300))
    item_id: Mapped[int] = mapped_column(BigInteger)
    digest: Mapped[str] = mapped_column(String(32))  # of the fields below (`site_listings.py`)
    title: Mapped[str | None] = mapped_column(Text)
    brand: Mapped[str | None] = mapped_column(String(200))
    size: Mapped[str | None] = mapped_column(String(100))
    condition: Mapped[str | None] = mapped_column(String(100))
    condition_raw: Mapped[str | None] = mapped_column(String(100))
    currency: Mapped[str | None] = mapped_column(String(8))
    seller_id: Mapped[int | None] = mapped_column(BigInteger)
    seller_login: Mapped[str | None] = mapped_column(String(200))
    seller_business: Mapped[bool | None] = mapped_column(Boolean)
    url: Mapped[str | None] = mapped_column(Text)
    photo_url: Mapped[str | None] = mapped_column(Text)
    listed_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
