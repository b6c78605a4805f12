"""The migrations build exactly the schema the models describe, on both databases."""

from __future__ import annotations

import asyncio

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import pool
from sqlalchemy.ext.asyncio import create_async_engine

from store._models import Base


def _differences(database_url: str) -> list[object]:
    async def compare() -> list[object]:
        engine = create_async_engine(database_url, poolclass=pool.NullPool)
        try:
            async with engine.connect() as connection:
                return await connection.run_sync(
                    lambda sync: compare_metadata(MigrationContext.configure(sync), Base.metadata)
                )
        finally:
            await engine.dispose()

    return asyncio.run(compare())


def test_migrated_schema_matches_the_models(database_url: str) -> None:
    # database_url is migrated to every head by the fixtures (SQLite copy or PostgreSQL).
    assert _differences(database_url) == []
