"""The dashboard's analysis is chosen: what each analysis rests on, an import's name, the pin.

Revision ID: d001
Revises: 0003
Create Date: 2026-11-27 10:00:00.000000

`analyses.window_days` and `analyses.sales` say how much evidence an analysis rests on, so the
dashboard finds the latest one above the trust floor in one query instead of reading
documents; `analyses.source_label` names an import after its exported monitor. Analyses
stored before are filled in here from their documents. `dashboard_pins` holds the analysis
a workspace pinned (one at most). A branch of its own (see `store/_db/migrate.py`): it needs
only the `analyses` table of 0003.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeGuard

import sqlalchemy as sa
from alembic import op

from store._db.base import UtcDateTime

revision = "d001"
down_revision = "0003"
branch_labels = None
depends_on = None

_BATCH = 200


def upgrade() -> None:
    with op.batch_alter_table("analyses", schema=None) as batch_op:
        batch_op.add_column(sa.Column("source_label", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("window_days", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("sales", sa.Integer(), nullable=True))
    op.create_table(
        "dashboard_pins",
        sa.Column("workspace_id", sa.String(length=40), nullable=False),
        sa.Column("analysis_id", sa.String(length=40), nullable=False),
        sa.Column("pinned_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["analysis_id"], ["analyses.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["workspace_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("workspace_id"),
    )
    with op.batch_alter_table("dashboard_pins", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_dashboard_pins_analysis_id"), ["analysis_id"], unique=False
        )
    _fill_depths()


def downgrade() -> None:
    with op.batch_alter_table("dashboard_pins", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_dashboard_pins_analysis_id"))
    op.drop_table("dashboard_pins")
    with op.batch_alter_table("analyses", schema=None) as batch_op:
        batch_op.drop_column("sales")
        batch_op.drop_column("window_days")
        batch_op.drop_column("source_label")


def _fill_depths() -> None:
    """Each stored analysis' days of history and sales, from its document, a batch of rows at
    a time by id (documents can be hundreds of kilobytes each)."""
    bind = op.get_bind()
    analyses = sa.table(
        "analyses",
        sa.column("id", sa.String),
        sa.column("result", sa.Text),
        sa.column("window_days", sa.Float),
        sa.column("sales", sa.Integer),
    )
    after = ""
    while True:
        rows = bind.execute(
            sa.select(analyses.c.id, analyses.c.result)
            .where(analyses.c.id > after)
            .order_by(analyses.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        for analysis_id, result in rows:
            days, sales = _depth(result)
            bind.execute(
                analyses.update()
                .where(analyses.c.id == analysis_id)
                .values(window_days=days, sales=sales)
            )
        after = rows[-1][0]


def _depth(result: str) -> tuple[float, int]:
    """`engine.analysis.evidence_depth` as of this revision (a migration keeps the rule it was
    written with): the window's days when the evidence is history, else 0, and `counts.sold`.
    Python's reader, since stored documents may hold NaN, which strict JSON readers refuse."""
    try:
        document: Any = json.loads(result)
    except ValueError:
        return 0.0, 0
    if not isinstance(document, dict):
        return 0.0, 0
    window, counts = document.get("window"), document.get("counts")
    days = window.get("days") if isinstance(window, dict) else None
    sold = counts.get("sold") if isinstance(counts, dict) else None
    history = document.get("evidence") == "history"
    return (
        float(days) if history and _finite(days) else 0.0,
        int(sold) if _finite(sold) else 0,
    )


def _finite(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
