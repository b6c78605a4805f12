"""The migrations build exactly the schema the models describe, on both databases (the
`listings` view, which the comparison leaves out, too)."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, pool

from store._db.urls import sync_database_url
from store._tables import Base
from store.monitors.models import Listing


def _differences(database_url: str) -> list[object]:
    engine = create_engine(sync_database_url(database_url), poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            return list(compare_metadata(MigrationContext.configure(connection), Base.metadata))
    finally:
        engine.dispose()


def test_migrated_schema_matches_the_models(database_url: str) -> None:
    # database_url is migrated to every head by the fixtures (SQLite copy or PostgreSQL).
    assert _differences(database_url) == []


def test_the_listings_view_has_the_models_columns_in_order(database_url: str) -> None:
    """The listings page reads the view's `SELECT *` by position as `Listing`'s columns."""
    engine = create_engine(sync_database_url(database_url), poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            assert "listings" in inspect(connection).get_view_names()
            columns = [c["name"] for c in inspect(connection).get_columns("listings")]
    finally:
        engine.dispose()
    assert columns == [c.name for c in Listing.__table__.columns]


def test_every_foreign_key_has_an_index_that_leads_with_its_columns(database_url: str) -> None:
    """Else deleting a parent row scans the whole child table for the rows its cascade
    removes (a monitor's deletion read every alert of every workspace)."""
    engine = create_engine(sync_database_url(database_url), poolclass=pool.NullPool)
    unindexed = []
    try:
        with engine.connect() as connection:
            schema = inspect(connection)
            for table in schema.get_table_names():
                leading = [tuple(i["column_names"]) for i in schema.get_indexes(table)]
                leading += [tuple(u["column_names"]) for u in schema.get_unique_constraints(table)]
                leading.append(tuple(schema.get_pk_constraint(table)["constrained_columns"]))
                for key in schema.get_foreign_keys(table):
                    columns = tuple(key["constrained_columns"])
                    if not any(index[: len(columns)] == columns for index in leading):
                        unindexed.append((table, columns))
    finally:
        engine.dispose()
    assert unindexed == []
