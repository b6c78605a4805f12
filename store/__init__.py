"""Persistence: SQLAlchemy models, Alembic migrations and the trio-facing `Store`.

Nothing outside this package touches SQLAlchemy sessions; everything goes through `Store`.
"""

from ._billing_records import (
    ApplyOutcome,
    BillingAccountRecord,
    BillingChangeRecord,
    CheckoutSessionRecord,
    Entitlement,
    PlanRecord,
    StripeEventKey,
)
from ._billing_store import BillingStore
from ._cluster_records import CommandRecord, NodeInfo, NodeRecord, TargetKind
from ._cluster_store import ClusterStore
from ._errors import AlreadyExists, DatabaseUnavailable, LeaseLost, StoreError
from ._listing_filters import SORTS as LISTING_SORTS
from ._market_store import MarketStore
from ._migrate import alembic_config
from ._monitor_records import (
    EVIDENCE_KINDS,
    LISTING_STATES,
    ConfirmedState,
    Evidence,
    ListingEventRecord,
    ListingFilter,
    ListingPage,
    ListingRecord,
    ListingState,
    MonitorRecord,
    MonitorStatus,
    ObservedListing,
    PollFailureKind,
    PollOutcome,
    PollRecord,
)
from ._monitor_store import MonitorStore
from ._records import AccessTokenRecord, Credentials, SessionOwner, TokenOwner, UserRecord
from ._rows import record_fields
from ._run_records import (
    FINISHED_RUN_STATES,
    AnalysisRecord,
    AnalysisSource,
    RunRecord,
    RunSource,
    RunState,
)
from ._run_store import RunStore
from ._store import Clock, Store, migrate, open_store, utc_now

__all__ = [
    "EVIDENCE_KINDS",
    "FINISHED_RUN_STATES",
    "LISTING_SORTS",
    "LISTING_STATES",
    "AccessTokenRecord",
    "AlreadyExists",
    "AnalysisRecord",
    "AnalysisSource",
    "ApplyOutcome",
    "BillingAccountRecord",
    "BillingChangeRecord",
    "BillingStore",
    "CheckoutSessionRecord",
    "Clock",
    "ClusterStore",
    "CommandRecord",
    "ConfirmedState",
    "Credentials",
    "DatabaseUnavailable",
    "Entitlement",
    "Evidence",
    "LeaseLost",
    "ListingEventRecord",
    "ListingFilter",
    "ListingPage",
    "ListingRecord",
    "ListingState",
    "MarketStore",
    "MonitorRecord",
    "MonitorStatus",
    "MonitorStore",
    "NodeInfo",
    "NodeRecord",
    "ObservedListing",
    "PlanRecord",
    "PollFailureKind",
    "PollOutcome",
    "PollRecord",
    "RunRecord",
    "RunSource",
    "RunState",
    "RunStore",
    "SessionOwner",
    "Store",
    "StoreError",
    "StripeEventKey",
    "TargetKind",
    "TokenOwner",
    "UserRecord",
    "alembic_config",
    "migrate",
    "open_store",
    "record_fields",
    "utc_now",
]
