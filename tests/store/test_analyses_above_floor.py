"""The dashboard finds the newest analysis above the trust floor by one seek of a partial
index (`ix_analyses_above_floor`), however many analyses lie below it: what lets its read be
a glance on SQLite's Trio thread."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, insert, pool, text
from sqlalchemy.orm import Session

from engine.analysis import TRUST_FLOOR
from store import DepthFloor, Store
from store._db import driver_reads
from store._db.urls import sync_database_url
from store.runs import analysis_views
from store.runs.models import INDEXED_FLOOR_DAYS, INDEXED_FLOOR_SALES, Analysis
from tests.store.test_store_monitors import _monitor

FLOOR = DepthFloor(TRUST_FLOOR.min_days, TRUST_FLOOR.min_sales)


def test_the_index_keeps_the_engines_trust_floor() -> None:
    """A floor that changes needs a migration that rebuilds the index with its figures."""
    assert (
        TRUST_FLOOR.min_days,
        TRUST_FLOOR.min_sales,
    ) == (INDEXED_FLOOR_DAYS, INDEXED_FLOOR_SALES)


def _analyses(workspace_id: str, below: int) -> list[dict[str, object]]:
    """One analysis above the floor, then `below` newer ones below it."""
    start = datetime(2026, 11, 1, tzinfo=UTC)
    rows = []
    for i in range(below + 1):
        above = i == 0
        rows.append(dict(
            id=f"ana_floor{i:05d}", workspace_id=workspace_id, run_id=None, source="import",
            source_url=None, created_at=start + timedelta(minutes=i), result="{}",
            source_label=None, window_days=30.0 if above else 1.0, sales=500 if above else 3,
        ))  # fmt: skip
    return rows


async def test_the_newest_above_the_floor_is_found_below_many_newer(store: Store) -> None:
    _, workspace_id = await _monitor(store)
    await store.unit(lambda db: db.execute(insert(Analysis), _analyses(workspace_id, 300)))

    view = await store.runs.dashboard(workspace_id, analysis_id=None, floor=FLOOR, recent_runs=0)

    assert view.trusted is not None and view.trusted.analysis.id == "ana_floor00000"
    assert view.latest is not None and view.latest.analysis.id == "ana_floor00300"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_sqlite_seeks_the_partial_index_for_the_trusted_candidate(database_url: str) -> None:
    """The candidates' statement as the dashboard runs it, parameters bound: SQLite plans
    the partial index (it checks the bound values against the index's condition)."""
    engine = create_engine(sync_database_url(database_url), poolclass=pool.NullPool)
    try:
        with Session(engine) as db:
            compiled = analysis_views._CANDIDATES._compiled_for(engine.dialect)
            params = {
                "workspace": "wsp_x",
                "min_days": FLOOR.min_days,
                "min_sales": FLOOR.min_sales,
            }
            cursor = db.connection().connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            bound = driver_reads._bound(compiled, params)
            plan = cursor.execute(f"EXPLAIN QUERY PLAN {compiled.sql}", bound).fetchall()
    finally:
        engine.dispose()
    details = [str(row[-1]) for row in plan]
    assert any("ix_analyses_above_floor" in detail for detail in details), details
    assert not any(detail.startswith("SCAN a") for detail in details), details


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_postgresql_has_the_partial_index(database_url: str) -> None:
    engine = create_engine(sync_database_url(database_url), poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            definition = connection.execute(
                text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_analyses_above_floor'")
            ).scalar_one()
    finally:
        engine.dispose()
    assert "WHERE" in definition and "window_days" in definition and "sales" in definition
