"""Fencing tokens: the check that keeps a node that lost its lease from writing."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from .._db.errors import LeaseLost
from ..monitors.models import Monitor
from ..runs.models import Run
from .records import TargetKind

Leased = type[Monitor] | type[Run]


def leased_model(kind: TargetKind) -> Leased:
    return Monitor if kind == "monitor" else Run


def fence(db: Session, kind: TargetKind, target_id: str, token: int) -> None:
    """Lock the row and check its fencing token: `LeaseLost` if another node claimed it since
    (or it is gone). Call first in a transaction whose writes must not outlive the lease; the
    row lock keeps a claim from slipping in before the transaction commits."""
    model = leased_model(kind)
    current = db.scalar(select(model.lease_token).where(model.id == target_id).with_for_update())
    if current is None or int(current) != token:
        raise LeaseLost(kind, target_id)
