"""Persistence: SQLAlchemy models, Alembic migrations and the trio-facing `Store`.

Nothing outside this package touches SQLAlchemy sessions; everything goes through `Store`.
"""

from ._errors import AlreadyExists, DatabaseUnavailable, StoreError
from ._migrate import alembic_config
from ._monitor_records import (
    LISTING_STATES,
    ConfirmedState,
    ListingEventRecord,
    ListingPage,
    ListingRecord,
    ListingState,
    MonitorRecord,
    MonitorStatus,
    ObservedListing,
    PollOutcome,
    PollRecord,
)
from ._monitor_store import MonitorStore
from ._records import AccessTokenRecord, Credentials, SessionOwner, TokenOwner, UserRecord
from ._store import Clock, Store, migrate, open_store, utc_now

__all__ = [
    "LISTING_STATES",
    "AccessTokenRecord",
    "AlreadyExists",
    "Clock",
    "ConfirmedState",
    "Credentials",
    "DatabaseUnavailable",
    "ListingEventRecord",
    "ListingPage",
    "ListingRecord",
    "ListingState",
    "MonitorRecord",
    "MonitorStatus",
    "MonitorStore",
    "ObservedListing",
    "PollOutcome",
    "PollRecord",
    "SessionOwner",
    "Store",
    "StoreError",
    "TokenOwner",
    "UserRecord",
    "alembic_config",
    "migrate",
    "open_store",
    "utc_now",
]
