"""Alembic environment: runs migrations over the sync drivers the Store itself uses."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from store._db.urls import sync_database_url
from store._tables import metadata

config = context.config
url = config.attributes.get("database_url") or config.get_main_option("sqlalchemy.url")


def _run_online() -> None:
    engine = create_engine(sync_database_url(str(url)), poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            # Batch mode lets ALTER TABLE work on SQLite, which cannot alter most things in place.
            context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
            with context.begin_transaction():
                context.run_migrations()
            connection.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    context.configure(url=str(url), target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    _run_online()
