"""The unit-of-work plumbing: the engine and its worker threads (`unit.py`), the declarative
base (`base.py`), rows to records (`rows.py`), the store's errors, migrations, database URLs,
PostgreSQL's LISTEN and the trio-asyncio loop it runs on. Imports no resource of the store.

Private to `store`: everything public is named in `store/__init__.py`.
"""
