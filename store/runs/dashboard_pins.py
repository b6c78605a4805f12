"""The analysis a workspace pinned to its dashboard: one at most, in its own workspace."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from .models import Analysis, DashboardPin


def pin_analysis(db: Session, workspace_id: str, analysis_id: str, now: datetime) -> bool:
    """Pin `analysis_id` in place of any pin before; False (nothing changed) when the analysis
    is not in `workspace_id`."""
    # Only the id: the row holds the whole document. Held (the lock the pin's foreign key
    # takes anyway) so that the run's deletion waits for the pin, then removes it with the
    # analysis, instead of deleting the analysis under it (an integrity error, a 500).
    found = db.scalar(
        select(Analysis.id)
        .where(Analysis.id == analysis_id, Analysis.workspace_id == workspace_id)
        .with_for_update(read=True, key_share=True)
    )
    if found is None:
        return False
    db.merge(DashboardPin(workspace_id=workspace_id, analysis_id=analysis_id, pinned_at=now))
    db.flush()
    return True


def unpin(db: Session, workspace_id: str) -> bool:
    """Remove the workspace's pin; False when there was none."""
    result = db.execute(delete(DashboardPin).where(DashboardPin.workspace_id == workspace_id))
    return bool(getattr(result, "rowcount", 0))


def pinned_analysis(db: Session, workspace_id: str) -> str | None:
    """The id of the pinned analysis (None: none pinned, or it was deleted since)."""
    return db.scalar(
        select(DashboardPin.analysis_id).where(DashboardPin.workspace_id == workspace_id)
    )
