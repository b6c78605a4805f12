"""Which driver serves a configured database URL.

The Store and the migrations run on the sync drivers (sqlite3, psycopg 3), and only
PostgreSQL's LISTEN uses asyncpg (`listen.asyncpg_dsn`). A URL may name no driver
(`sqlite:///...`, `postgresql://...`, the documented form), a sync one, or the asyncio driver
the service once ran on (`sqlite+aiosqlite`, `postgresql+asyncpg`): configurations written
then keep working.
"""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url

SYNC_DRIVERS = {
    "sqlite": "sqlite+pysqlite",
    "sqlite+aiosqlite": "sqlite+pysqlite",
    "sqlite+pysqlite": "sqlite+pysqlite",
    "postgresql": "postgresql+psycopg",
    "postgresql+asyncpg": "postgresql+psycopg",
    "postgresql+psycopg": "postgresql+psycopg",
}


def sync_url(url: URL) -> URL:
    """`url` with the sync driver the Store runs on; `ValueError` for a database it does not
    support."""
    driver = SYNC_DRIVERS.get(url.drivername)
    if driver is None:
        raise ValueError(f"unsupported database driver {url.drivername!r}")
    synced = url.set(drivername=driver)
    ssl = url.query.get("ssl")
    if driver.startswith("postgresql") and isinstance(ssl, str) and "sslmode" not in url.query:
        # asyncpg's `ssl=` takes libpq's sslmode names (or true / false); psycopg wants
        # `sslmode=`. A URL written for asyncpg keeps its meaning.
        mode = {"true": "require", "false": "disable"}.get(ssl.lower(), ssl)
        synced = synced.difference_update_query(["ssl"]).update_query_dict({"sslmode": mode})
    return synced


def sync_database_url(database_url: str) -> str:
    """`sync_url` of a URL given as text, as text (passwords kept)."""
    return sync_url(make_url(database_url)).render_as_string(hide_password=False)
