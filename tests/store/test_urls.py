"""Configured database URLs keep their meaning on the Store's sync drivers."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from store._db.urls import sync_database_url, sync_url


@pytest.mark.parametrize(
    ("configured", "used"),
    [
        ("sqlite+aiosqlite:///var/x.db", "sqlite+pysqlite:///var/x.db"),
        ("sqlite:///var/x.db", "sqlite+pysqlite:///var/x.db"),
        ("postgresql+asyncpg://u:p@h:5432/db", "postgresql+psycopg://u:p@h:5432/db"),
        ("postgresql://u@h/db", "postgresql+psycopg://u@h/db"),
        ("postgresql+asyncpg://u@h/db?ssl=require", "postgresql+psycopg://u@h/db?sslmode=require"),
        ("postgresql+asyncpg://u@h/db?ssl=true", "postgresql+psycopg://u@h/db?sslmode=require"),
        (
            "postgresql+psycopg://u@h/db?sslmode=verify-full",
            "postgresql+psycopg://u@h/db?sslmode=verify-full",
        ),
    ],
)
def test_asyncio_driver_urls_map_to_the_sync_drivers(configured: str, used: str) -> None:
    assert sync_database_url(configured) == used


def test_an_unknown_driver_is_refused() -> None:
    with pytest.raises(ValueError, match="mysql"):
        sync_url(make_url("mysql+aiomysql://u@h/db"))
