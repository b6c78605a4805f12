"""Fencing tokens: the check that keeps a node that lost its lease from writing."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ._cluster_records import TargetKind
from ._errors import LeaseLost
from ._monitor_models import Monitor
from ._run_models import Run

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
