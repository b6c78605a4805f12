"""PostgreSQL connections that died in the pool (a server restart, a proxy's idle timeout):
an idle one is checked and replaced before use; a busy one fails one unit of work, as
`DatabaseUnavailable`, and the next units get fresh connections."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy.engine import make_url

from store import DatabaseUnavailable, open_store
from store._db import unit as store_module

pytestmark = pytest.mark.postgres


def _terminate_pool(postgres_url: str) -> int:
    """End every other session on the test database (what a server restart does)."""
    url = make_url(postgres_url)
    with psycopg.connect(
        host=url.host, port=url.port, user=url.username, dbname="postgres", autocommit=True
    ) as admin:
        ended = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (url.database,),
        ).fetchone()
    return int(ended[0]) if ended else 0


async def test_an_idle_dead_connection_is_replaced_unseen(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "IDLE_PING_SECONDS", 0.0)  # every pooled one is "idle"
    async with open_store(postgres_url) as store:
        await store.ping()
        assert _terminate_pool(postgres_url) >= 1
        await store.ping()  # checked at checkout, replaced: no error reaches the caller
        await store.ping()


async def test_a_busy_dead_connection_fails_once_then_the_pool_is_fresh(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "IDLE_PING_SECONDS", 3600.0)  # never checked
    async with open_store(postgres_url) as store:
        await store.ping()
        assert _terminate_pool(postgres_url) >= 1
        with pytest.raises(DatabaseUnavailable):
            await store.ping()
        await store.ping()
        await store.ping()
