"""The migrations build exactly the schema the models describe, on both databases."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, pool

from store._db.urls import sync_database_url
from store._tables import Base


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
