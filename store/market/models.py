"""What the service remembers of each marketplace site: which wire profile it speaks, and the
session it last handed over (sealed)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String, Text
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
