"""Fixtures of the store's tests."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import BACKENDS, _pg_admin, _pg_url


@pytest.fixture(params=BACKENDS)
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database with no schema at all, for migration tests to start from (the shared
    fixtures' databases are migrated already)."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
        return
    request.getfixturevalue("postgres_template")  # skips when PostgreSQL is unreachable
    name = f"nichescope_mig_{uuid.uuid4().hex[:12]}"
    asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
    try:
        yield _pg_url(name)
    finally:
        asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
