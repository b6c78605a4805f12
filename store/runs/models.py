"""Tables of runs (analysis jobs), their logs, and the analyses they produce."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from .._db.base import Base, UtcDateTime

# The trust floor (`engine.analysis.TRUST_FLOOR`; a test holds them equal) above which an
# index keeps a workspace's analyses, so that the dashboard finds the newest analysis above
# it by one seek however many lie below (`analysis_views.dashboard_view`, a glance).
INDEXED_FLOOR_DAYS = 7.0
INDEXED_FLOOR_SALES = 30
ABOVE_INDEXED_FLOOR = f"window_days >= {INDEXED_FLOOR_DAYS!r} AND sales >= {INDEXED_FLOOR_SALES!r}"


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_workspace", "workspace_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    label: Mapped[str | None] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(16))
    url: Mapped[str | None] = mapped_column(Text)
    monitor_id: Mapped[str | None] = mapped_column(String(40))
    max_items: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16), index=True)
    replay_of: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    items: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    analysis_id: Mapped[str | None] = mapped_column(String(40))
    # Cluster mode: the node holding this row's lease, its fencing token (bumped at every
    # claim; a write carrying an older token is refused) and when the lease lapses.
    lease_owner: Mapped[str | None] = mapped_column(String(200), index=True)
    lease_token: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    lease_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # A monitor run ranks on likely sales (sold by absence from the feed) too, not only on
    # confirmed ones; NULL lets the analysis choose (likely sales only when no sale was
    # confirmed). Runs made before that choice existed keep false, their default then.
    include_likely_sales: Mapped[bool | None] = mapped_column(Boolean, nullable=True)


class RunLogLine(Base):
    __tablename__ = "run_log_lines"
    __table_args__ = (Index("ix_run_log_lines_run", "run_id", "id"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    line: Mapped[str] = mapped_column(Text)


class Analysis(Base):
    """A finished analysis: ranked niches, alerts and graph specs, as one JSON document."""

    __tablename__ = "analyses"
    __table_args__ = (
        Index("ix_analyses_workspace", "workspace_id", "created_at"),
        Index(
            "ix_analyses_above_floor", "workspace_id", "created_at",
            sqlite_where=text(ABOVE_INDEXED_FLOOR), postgresql_where=text(ABOVE_INDEXED_FLOOR),
        ),
    )  # fmt: skip

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    run_id: Mapped[str | None] = mapped_column(String(40), index=True)
    source: Mapped[str] = mapped_column(String(16))
    source_url: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # The document, hundreds of kilobytes: on SQLite it is the row's last column (t002), so
    # the small ones never sit behind its overflow pages; lists do not read it.
    result: Mapped[str] = mapped_column(Text)
    # An import's name: the label of the monitor its export came from (its URL is no name).
    source_label: Mapped[str | None] = mapped_column(String(200))
    # What the analysis rests on, kept beside the document so that the dashboard picks the
    # latest analysis with enough evidence in one query (`engine.analysis.evidence_depth`).
    window_days: Mapped[float | None] = mapped_column(Float)
    sales: Mapped[int | None] = mapped_column(Integer)


class DashboardPin(Base):
    """The analysis a workspace pinned to its dashboard (at most one): shown there instead of
    the one the trust floor picks, until unpinned; deleting the analysis removes the pin."""

    __tablename__ = "dashboard_pins"

    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    analysis_id: Mapped[str] = mapped_column(
        ForeignKey("analyses.id", ondelete="CASCADE"), index=True
    )
    pinned_at: Mapped[datetime] = mapped_column(UtcDateTime())
