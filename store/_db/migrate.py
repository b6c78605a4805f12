"""Schema migrations through Alembic, configured in code (no alembic.ini to lose)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

_MIGRATIONS = Path(__file__).parents[1] / "migrations"


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["database_url"] = database_url
    return config


def upgrade(database_url: str, revision: str = "heads") -> None:
    """Bring the database to `revision`; blocking, so call it from a worker thread under Trio.

    The default is every branch head: features add migrations on their own branches (each
    revising `0001`), and all of them apply.
    """
    command.upgrade(alembic_config(database_url), revision)
