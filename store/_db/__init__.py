"""The unit-of-work plumbing: the engine and its worker threads (`unit.py`), the declarative
base (`base.py`), rows to records (`rows.py`), the store's errors, migrations, database URLs,
PostgreSQL's LISTEN (asyncpg, on a trio-asyncio loop of its own). Imports no resource of the
store.

Private to `store`: everything public is named in `store/__init__.py`.
"""
