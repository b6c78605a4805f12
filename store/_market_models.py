"""The market profile memory: which wire profile each marketplace origin speaks."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from ._models import Base, UtcDateTime


class MarketProfile(Base):
    """The wire profile (e.g. ``2026-09``) last found to work on one origin; one row per
    origin, shared by every node of a cluster so none probes what another already learnt."""

    __tablename__ = "market_profiles"

    origin: Mapped[str] = mapped_column(String(300), primary_key=True)
    profile: Mapped[str] = mapped_column(String(32))
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
