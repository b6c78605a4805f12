"""The trio-facing Store: the only way anything reaches the database.

`Store` is the unit-of-work plumbing (`store/_db/unit.py`) with the accounts' methods
(`store/accounts/facade.py`) and one facade per resource attached as an attribute
(`store.monitors`, `store.notify`, ...), each in its resource's folder, so that no single
file grows without bound.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import Engine
from sqlalchemy.engine import URL, make_url

from ._db.unit import (
    Clock,
    Lanes,
    create_sync_engine,
    dispose,
    ensure_sqlite_folder,
    glance_engine,
    migrate,
    utc_now,
)
from .accounts.confirmation_facade import ConfirmationStore
from .accounts.facade import Accounts
from .billing.facade import BillingStore
from .cluster.facade import ClusterStore
from .market.facade import MarketStore
from .market.price_book_facade import PriceBookStore
from .monitors.facade import MonitorStore
from .notify.facade import NotifyStore
from .runs.facade import RunStore

__all__ = ["Clock", "Store", "migrate", "open_store", "utc_now"]


class Store(Accounts):
    """Units of work over one SQLAlchemy engine. Construct with `open_store`.

    Account methods live here (through `Accounts`); each other domain (billing, monitors,
    runs, ...) has its own facade class in its own folder, built on `unit`, and attached as an
    attribute in `__init__` (for example `store.billing`).
    """

    def __init__(
        self, engine: Engine, url: URL, lanes: Lanes, clock: Clock = utc_now,
        *, glances: Engine | None = None,
    ) -> None:  # fmt: skip
        super().__init__(engine, url, lanes, clock, glances=glances)
        self.monitors = MonitorStore(self)
        self.runs = RunStore(self)
        self.billing = BillingStore(self)
        self.cluster = ClusterStore(self)
        self.market = MarketStore(self)
        self.notify = NotifyStore(self)
        self.prices = PriceBookStore(self)  # the market's price book, per site
        self.confirmations = ConfirmationStore(self)


@asynccontextmanager
async def open_store(
    database_url: str, *, run_migrations: bool = False, clock: Clock = utc_now
) -> AsyncIterator[Store]:
    """Open the database for the lifetime of the block.

    With `run_migrations`, pending migrations are applied first (the embedded SQLite default
    migrates itself this way). The engine's connections are closed on exit, even on error.
    """
    ensure_sqlite_folder(database_url)
    if run_migrations:
        await migrate(database_url)
    engine, lanes = create_sync_engine(database_url)
    glances = glance_engine(engine)
    try:
        yield Store(engine, make_url(database_url), lanes, clock, glances=glances)
    finally:
        if glances is not None:
            glances.dispose()  # here: its connection was made on this thread
        await dispose(engine)
