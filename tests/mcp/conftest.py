"""MCP tests: rules of the transport that never touch the database run on SQLite only."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    path = tmp_path / "mcp.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"
