"""The list of analyses reads no documents, and on SQLite no document stands between a row
and its other columns (migration t002): a list, the dashboard and an analysis' origin read
the small columns without walking a document's overflow pages."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine, delete, insert, inspect, pool, select, text

from store import DatabaseUnavailable, Store
from store._db.migrate import upgrade
from store._db.urls import sync_database_url
from store.accounts.models import Workspace
from store.runs.models import Analysis, DashboardPin
from tests.conftest import new_workspace

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
DOCUMENT = '{"niches": [' + ", ".join(f'{{"pad": "{"x" * 400}"}}' for _ in range(600)) + "]}"


def _analysis(workspace_id: str, n: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"an_{workspace_id}_{n}", "workspace_id": workspace_id, "run_id": None,
        "source": "import", "source_url": f"https://www.vinted.fr/catalog?brand_ids[]={n}",
        "created_at": T0 + timedelta(hours=n), "result": DOCUMENT,
        "source_label": f"Levi's {n}", "window_days": 8.0 + n, "sales": 30 + n,
        **fields,
    }  # fmt: skip


async def test_the_list_names_and_dates_analyses_without_their_documents(store: Store) -> None:
    workspace_id = await new_workspace(store)
    other = await new_workspace(store)
    rows = [_analysis(workspace_id, n) for n in range(3)] + [_analysis(other, 9)]
    await store.unit(lambda db: db.execute(insert(Analysis), rows))

    listed, total = await store.runs.analyses(workspace_id, 0, 2)

    assert total == 3 and [a.id for a in listed] == [rows[2]["id"], rows[1]["id"]]
    for entry in listed:
        whole = await store.runs.analysis(entry.id, workspace_id)
        assert whole is not None and whole.result_json == DOCUMENT
        assert entry == replace(whole, result_json="")  # as `runs.analyses` says
    rest, total = await store.runs.analyses(workspace_id, 2, 2)
    assert [a.id for a in rest] == [rows[0]["id"]] and total == 3


def test_t002_puts_the_document_last_and_keeps_every_row_key_and_index(
    empty_database: str,
) -> None:
    upgrade(empty_database, "t001")
    engine = create_engine(sync_database_url(empty_database), poolclass=pool.NullPool)
    try:
        with engine.begin() as db:
            for name in ("ws_a", "ws_b"):
                db.execute(insert(Workspace).values(id=name, name=name, created_at=T0))
            rows = [_analysis("ws_a", n) for n in range(3)] + [_analysis("ws_b", 0, sales=2)]
            db.execute(insert(Analysis), rows)
            db.execute(insert(DashboardPin).values(
                workspace_id="ws_a", analysis_id=rows[1]["id"], pinned_at=T0
            ))  # fmt: skip
            before = db.execute(select(Analysis.__table__).order_by(Analysis.id)).all()
            indexes_before = _index_definitions(db)
        upgrade(empty_database, "heads")
        with engine.begin() as db:
            after = db.execute(select(Analysis.__table__).order_by(Analysis.id)).all()
            pinned = db.execute(select(DashboardPin.analysis_id)).scalars().all()
            indexes_after = _index_definitions(db)
            columns = [c["name"] for c in _columns(db)]
        assert after == before and pinned == [rows[1]["id"]]
        assert indexes_after == indexes_before
        if engine.dialect.name == "sqlite":
            assert columns[-1] == "result"
            assert (
                "WHERE window_days >= 7.0 AND sales >= 30"
                in indexes_after["ix_analyses_above_floor"]
            )
            # The workspace's cascade still holds (SQLite enforces keys only when asked).
            path = str(engine.url.database)
            with sqlite3.connect(path) as raw:
                raw.execute("PRAGMA foreign_keys=ON")
                raw.execute("DELETE FROM workspaces WHERE id = 'ws_a'")
                left = raw.execute("SELECT workspace_id FROM analyses").fetchall()
                pins = raw.execute("SELECT count(*) FROM dashboard_pins").fetchone()
            assert left == [("ws_b",)] and pins == (0,)
        else:
            assert columns[-1] != "result"  # PostgreSQL is left as it was (TOAST)
            with engine.begin() as db:
                db.execute(delete(Workspace).where(Workspace.id == "ws_a"))
                left = db.execute(select(Analysis.workspace_id)).scalars().all()
            assert left == ["ws_b"]
    finally:
        engine.dispose()


def _columns(db: Any) -> list[dict[str, Any]]:
    return list(inspect(db).get_columns("analyses"))


def _index_definitions(db: Any) -> dict[str, str]:
    if db.dialect.name == "sqlite":
        query = (
            "SELECT name, sql FROM sqlite_master"
            " WHERE tbl_name = 'analyses' AND type = 'index' AND sql IS NOT NULL"
        )
    else:
        query = "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'analyses'"
    return {name: definition for name, definition in db.execute(text(query)).all()}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_the_list_never_reads_a_document(store: Store) -> None:
    """A document SQLite cannot hand over (bytes that are not UTF-8) fails any read of it,
    and not the list: the list does not read it."""
    workspace_id = await new_workspace(store)
    row = _analysis(workspace_id, 0)
    await store.unit(lambda db: db.execute(insert(Analysis), [row]))
    unreadable = text("UPDATE analyses SET result = CAST(x'fffe' AS TEXT) WHERE id = :id")
    await store.unit(lambda db: db.execute(unreadable, {"id": row["id"]}))

    listed, total = await store.runs.analyses(workspace_id, 0, 10)

    assert [a.id for a in listed] == [row["id"]] and total == 1
    with pytest.raises(DatabaseUnavailable):  # sqlite3: "Could not decode to UTF-8"
        await store.runs.analysis(row["id"], workspace_id)
