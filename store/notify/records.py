"""Records of notifications (channels, rules, the outbox, the delivery log), in and out of
the store. docs/notifications.md says what each field means to the other parts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Literal

from .._db.rows import to_record

NotifyKind = Literal[
    "new_listing", "deal", "price_drop", "sell_through_jump", "new_hot_niche", "monitor_error"
]  # fmt: skip
NOTIFY_KINDS: tuple[NotifyKind, ...] = (
    "new_listing", "deal", "price_drop", "sell_through_jump", "new_hot_niche", "monitor_error"
)  # fmt: skip
# The webhook event `type` of each kind (plus "test.ping" for a test the API sends itself).
EVENT_TYPES: dict[NotifyKind, str] = {
    "new_listing": "listing.new",
    "deal": "listing.deal",
    "price_drop": "listing.price_drop",
    "sell_through_jump": "niche.sell_through_jump",
    "new_hot_niche": "niche.new_hot",
    "monitor_error": "monitor.error",
}
ChannelKind = Literal["email", "webhook", "telegram", "discord"]
CHANNEL_KINDS: tuple[ChannelKind, ...] = ("email", "webhook", "telegram", "discord")
NotificationStatus = Literal["pending", "delivered", "failed"]
RuleMode = Literal["instant", "digest"]
MinConfidence = Literal["any", "low", "medium", "high"]
# A niche's confidence from its sales in the monitor ("none": no sale yet).
Confidence = Literal["none", "low", "medium", "high"]
ChannelHealth = Literal["healthy", "failing", "disabled", "new", "unconfirmed"]


@dataclass(frozen=True, slots=True)
class RuleFilters:
    """What a listing must be for a rule to alert on it; the defaults admit everything."""

    price_min: Decimal | None = None
    price_max: Decimal | None = None
    brands: tuple[str, ...] = ()  # case-insensitive exact
    sizes: tuple[str, ...] = ()  # case-insensitive exact
    conditions: tuple[str, ...] = ()  # normalised condition names as stored, case-insensitive
    include_keywords: tuple[str, ...] = ()  # any of them in the title (case-insensitive)
    exclude_keywords: tuple[str, ...] = ()  # none of them in the title
    exclude_sellers: tuple[str, ...] = ()  # seller id (digits) or login
    business: bool | None = None  # None: either; False: private sellers only; True: business
    # Niche confidence from the niche's sales in this monitor: low 1-4, medium 5-19, high
    # >= 20 ("any" also admits niches with no sale). Listing alerts below it are skipped.
    min_confidence: MinConfidence = "any"


@dataclass(frozen=True, slots=True)
class NewRule:
    """What the API gives to create or replace a rule (`monitor_id` None: a workspace
    default, used by every monitor that has no enabled rule of its own)."""

    name: str
    kinds: tuple[NotifyKind, ...]
    monitor_id: str | None = None
    filters: RuleFilters = field(default_factory=RuleFilters)
    # The engine's `DEAL_RATIO` (engine.analysis.deals), which the store cannot import; a
    # test holds the two together.
    deal_ratio: float = 0.7
    channel_ids: tuple[str, ...] = ()  # empty: every channel of the workspace
    mode: RuleMode = "instant"
    digest_hour: int = 8  # 0-23, in `timezone`
    quiet_start: str | None = None  # "HH:MM" in `timezone`; both or neither
    quiet_end: str | None = None
    timezone: str = "UTC"  # IANA name
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class RuleRecord:
    id: str
    workspace_id: str
    monitor_id: str | None
    name: str
    kinds: tuple[NotifyKind, ...]
    filters: RuleFilters
    deal_ratio: float
    channel_ids: tuple[str, ...]
    mode: RuleMode
    digest_hour: int
    quiet_start: str | None
    quiet_end: str | None
    timezone: str
    enabled: bool
    created_at: datetime
    updated_at: datetime

    def as_new(self) -> NewRule:
        """The rule as a `NewRule` (to replace it with a few fields changed)."""
        return to_record(NewRule, self)


@dataclass(frozen=True, slots=True)
class NewChannel:
    workspace_id: str
    kind: ChannelKind
    name: str
    hint: str  # the masked destination shown to users
    secret_box: str  # ciphertext from the engine's SecretBox; never plaintext
    # True for a destination its recipient must agree to first (an e-mail address that is
    # not the caller's proven own): nothing is queued or sent until then.
    awaiting_confirmation: bool = False


@dataclass(frozen=True, slots=True)
class ChannelRecord:
    id: str
    workspace_id: str
    kind: ChannelKind
    name: str
    hint: str
    secret_box: str  # ciphertext: never show it, never log it
    enabled: bool
    disabled_reason: str | None
    created_at: datetime
    failing_since: datetime | None  # None while healthy
    last_success_at: datetime | None
    last_failure_at: datetime | None
    last_error: str | None
    next_send_at: datetime | None  # rate limit: the earliest the next message may go
    confirmed_at: datetime | None = None  # None: its recipient has not agreed yet

    @property
    def confirmed(self) -> bool:
        return self.confirmed_at is not None

    @property
    def health(self) -> ChannelHealth:
        if self.confirmed_at is None:
            return "unconfirmed"
        if not self.enabled:
            return "disabled"
        if self.failing_since is not None:
            return "failing"
        if self.last_success_at is None and self.last_failure_at is None:
            return "new"
        return "healthy"


@dataclass(frozen=True, slots=True)
class NotificationRecord:
    id: str  # also the Standard Webhooks `webhook-id`
    workspace_id: str
    monitor_id: str | None
    rule_id: str | None
    channel_id: str
    kind: NotifyKind
    subject: str
    payload: dict[str, Any]  # the webhook body
    created_at: datetime
    due_at: datetime
    status: NotificationStatus
    attempts: int
    next_attempt_at: datetime
    delivered_at: datetime | None
    last_error: str | None


@dataclass(frozen=True, slots=True)
class ChannelBatch:
    """What the dispatcher claims: one channel and its due notifications, oldest first."""

    channel: ChannelRecord
    notifications: tuple[NotificationRecord, ...]


@dataclass(frozen=True, slots=True)
class DeliveryOutcome:
    """What the dispatcher reports after one attempt at one batch."""

    channel_id: str
    notification_ids: tuple[str, ...]
    ok: bool
    status_code: int | None
    latency_ms: int
    error: str | None  # in words
    retry_at: datetime | None  # when to try again (backoff or Retry-After); None with ok
    permanent: bool = False  # a 4xx that will never succeed: the notifications fail now
    next_send_at: datetime | None = None  # the channel's rate limit after this send
    disable_after: timedelta = timedelta(hours=24)  # failing this long: channel disabled


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    id: int
    workspace_id: str
    channel_id: str
    attempted_at: datetime
    notification_ids: tuple[str, ...]  # empty for a test
    ok: bool
    status_code: int | None
    latency_ms: int
    error: str | None
    test: bool
