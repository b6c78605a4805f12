"""Tables of cluster mode: the nodes sharing one PostgreSQL, and commands between them.

Leases themselves are three columns on `monitors` and `runs` (owner node, fencing token,
expiry), so claiming work and checking a fence is one row lock on the row being worked on.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from .._db.base import Base, UtcDateTime


class Node(Base):
    """One running `nichescope serve` or `worker`; alive while its heartbeat is fresh."""

    __tablename__ = "nodes"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    host: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int] = mapped_column(Integer)
    version: Mapped[str] = mapped_column(String(40))
    role: Mapped[str] = mapped_column(String(16))  # "serve" or "worker"
    started_at: Mapped[datetime] = mapped_column(UtcDateTime())
    heartbeat_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)
    monitors: Mapped[int] = mapped_column(Integer, default=0)
    runs: Mapped[int] = mapped_column(Integer, default=0)
    # The node's actor snapshot (JSON list), so any node's ops endpoint shows the cluster.
    actors: Mapped[str] = mapped_column(Text, default="[]")


class ClusterCommand(Base):
    """A command for the node owning a monitor or run (pause, resume, poll now, stop, cancel).

    Written in the sender's transaction together with a NOTIFY that wakes the owner; the
    owner also reads this table on every heartbeat, so a lost notification only delays."""

    __tablename__ = "cluster_commands"
    __table_args__ = (Index("ix_cluster_commands_target", "target_id"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    target_kind: Mapped[str] = mapped_column(String(16))  # "monitor" or "run"
    target_id: Mapped[str] = mapped_column(String(40))
    command: Mapped[str] = mapped_column(String(16))  # e.g. "Pause" (engine/cluster/_codec.py)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
