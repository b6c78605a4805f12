"""Bodies of `/api/notifications/*`: channels, rules, deliveries and alerts.

Requests are `Strict` (unknown fields refused). Channel answers never carry a destination's
secret: only its `hint`, and the webhook signing secret once, in the creation (or rotation)
answer.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from api.http.schemas import MAX_PAGE, Strict
from api.http.storable import document_storable_text
from api.notifications.channel_schema import kind_branches

ChannelKindName = Literal["email", "webhook", "telegram", "discord"]
NotifyKindName = Literal[
    "new_listing", "deal", "price_drop", "sell_through_jump", "new_hot_niche", "monitor_error"
]
Health = Literal["healthy", "failing", "disabled", "new", "unconfirmed"]

MAX_NAME = 100
# Not spaces only (`_named`: Python's, JSON Schema's and pydantic's), nor NUL (`Strict`).
VISIBLE = r"^[^\x00]*[^\s\x00\x1c-\x1f\x85\ufeff][^\x00]*$"
MAX_LIST = 50
MAX_ITEM = 200
HHMM = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
ID_PATTERN = r"^[a-z]+_[0-9A-Za-z_]+$"

# What each kind of channel needs, for the 422 and the OpenAPI description.
NEEDS: dict[str, tuple[str, ...]] = {
    "email": ("email",),
    "webhook": ("url",),
    "discord": ("url",),
    "telegram": ("bot_token", "chat_id"),
}


def _named(value: str) -> str:
    if not value.strip():
        raise ValueError("name must not be blank")
    return value.strip()


def _kind_branches(schema: dict[str, Any]) -> None:
    """State in the document what `_fields_of_kind` and the destination checks take: a union
    discriminated by `kind` (`channel_schema`)."""
    document_storable_text(schema)
    schema["oneOf"] = kind_branches()


class CreateChannelRequest(Strict):
    """A destination, by `kind`: `email` needs `email`; `webhook` and `discord` need `url`
    (Discord's: https://discord.com/api/webhooks/<id>/<token>); `telegram` needs `bot_token`
    and `chat_id`. Fields another kind needs are refused."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=_kind_branches)

    kind: ChannelKindName
    name: str = Field(min_length=1, max_length=MAX_NAME, pattern=VISIBLE)
    url: str | None = Field(default=None, min_length=1, max_length=2048)
    email: str | None = Field(default=None, min_length=3, max_length=320)
    bot_token: str | None = Field(default=None, min_length=1, max_length=200)
    chat_id: str | None = Field(default=None, min_length=1, max_length=100)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _named(value)

    @model_validator(mode="after")
    def _fields_of_kind(self) -> CreateChannelRequest:
        needed = NEEDS[self.kind]
        missing = [f for f in needed if getattr(self, f) is None]
        if missing:
            raise ValueError(f"a {self.kind} channel needs {' and '.join(missing)}")
        extra = [
            f for f in ("url", "email", "bot_token", "chat_id")
            if f not in needed and getattr(self, f) is not None
        ]  # fmt: skip
        if extra:
            raise ValueError(f"a {self.kind} channel takes no {' or '.join(extra)}")
        return self


class UpdateChannelRequest(Strict):
    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=document_storable_text)

    name: str | None = Field(default=None, min_length=1, max_length=MAX_NAME, pattern=VISIBLE)
    enabled: bool | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return None if value is None else _named(value)


class ChannelOut(BaseModel):
    id: str
    kind: ChannelKindName
    name: str
    hint: str = Field(
        description="The destination, masked: enough to recognise it, never its secret."
    )
    enabled: bool
    confirmed: bool = Field(
        description="False while an e-mail channel's recipient has not opened the link mailed "
        "to the address: nothing is queued or sent to it until then."
    )
    health: Health = Field(
        description="`unconfirmed` until its recipient confirms (e-mail), `new` until the first "
        "delivery, `healthy` after a success, `failing` since a failure, `disabled` when "
        "turned off (by a person, or after failing a day)."
    )
    disabled_reason: str | None
    last_error: str | None
    last_success_at: datetime | None
    last_failure_at: datetime | None
    failing_since: datetime | None
    created_at: datetime


class ChannelList(BaseModel):
    channels: list[ChannelOut]


class CreatedChannel(ChannelOut):
    signing_secret: str | None = Field(
        default=None,
        description="Webhooks only: the Standard Webhooks signing secret (`whsec_...`), shown "
        "in this answer only. Verify `webhook-signature` with it.",
    )
    warning: str | None = None


class RotatedSecret(BaseModel):
    channel: ChannelOut
    signing_secret: str = Field(description="The new secret, shown in this answer only.")
    previous_valid_until: datetime = Field(
        description="Until then every message carries two signatures, one per secret."
    )
    warning: str


class TestResult(BaseModel):
    ok: bool
    status_code: int | None
    latency_ms: int
    error: str | None
    message: str = Field(description="The outcome in words.")


Entry = Annotated[str, Field(max_length=MAX_ITEM)]
# What `MonitorRule._ids` checks, stated in the document (the check keeps its own message).
ChannelId = Annotated[str, Field(json_schema_extra={"pattern": ID_PATTERN, "maxLength": 64})]


class RuleFiltersIn(Strict):
    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=document_storable_text)

    price_min: float | None = Field(default=None, ge=0, le=1e9)
    price_max: float | None = Field(default=None, ge=0, le=1e9)
    brands: list[Entry] = Field(default_factory=list, max_length=MAX_LIST)
    sizes: list[Entry] = Field(default_factory=list, max_length=MAX_LIST)
    conditions: list[Entry] = Field(default_factory=list, max_length=MAX_LIST)
    include_keywords: list[Entry] = Field(default_factory=list, max_length=MAX_LIST)
    exclude_keywords: list[Entry] = Field(default_factory=list, max_length=MAX_LIST)
    exclude_sellers: list[Entry] = Field(default_factory=list, max_length=MAX_LIST)
    business: bool | None = Field(
        default=None, description="null: any seller; false: private only; true: business only"
    )
    min_confidence: Literal["any", "low", "medium", "high"] = "any"

    @field_validator(
        "brands", "sizes", "conditions", "include_keywords", "exclude_keywords",
        "exclude_sellers",
    )  # fmt: skip
    @classmethod
    def _words(cls, value: list[str]) -> list[str]:
        cleaned = [v.strip() for v in value if v.strip()]
        if any(len(v) > MAX_ITEM for v in cleaned):
            raise ValueError(f"each entry is at most {MAX_ITEM} characters")
        return list(dict.fromkeys(cleaned))

    @model_validator(mode="after")
    def _range(self) -> RuleFiltersIn:
        if (
            self.price_min is not None
            and self.price_max is not None
            and self.price_min > self.price_max
        ):
            raise ValueError("price_min must not be above price_max")
        return self


# Every time zone this machine knows, named in the document so that a client (or a fuzzer)
# can tell a valid one from the schema alone.
TIME_ZONES: list[Any] = sorted(available_timezones())


def _quiet_pair_schema(schema: dict[str, Any]) -> None:
    """State in the document what `_quiet_pair` checks: quiet hours both or neither."""
    document_storable_text(schema)
    schema["anyOf"] = [
        {"properties": {"quiet_start": {"type": "null"}, "quiet_end": {"type": "null"}}},
        {
            "properties": {"quiet_start": {"type": "string"}, "quiet_end": {"type": "string"}},
            "required": ["quiet_start", "quiet_end"],
        },
    ]


class MonitorRule(Strict):
    """A rule: which alerts (`kinds`) about which listings (`filters`) go to which channels
    (`channel_ids`, empty for every channel), at once or as a daily digest."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=_quiet_pair_schema)

    name: str = Field(min_length=1, max_length=MAX_NAME, pattern=VISIBLE)
    kinds: list[NotifyKindName] = Field(min_length=1, max_length=6)
    deal_ratio: float = Field(
        default=0.7, gt=0, le=1,
        description="`deal`: asking at most this share of the niche's median sold price.",
    )  # fmt: skip
    filters: RuleFiltersIn = Field(default_factory=RuleFiltersIn)
    channel_ids: list[ChannelId] = Field(
        default_factory=list, max_length=20,
        description="The channels to send to (ids such as chn_...); empty for every channel.",
    )  # fmt: skip
    mode: Literal["instant", "digest"] = "instant"
    digest_hour: int = Field(default=8, ge=0, le=23)
    quiet_start: str | None = Field(default=None, pattern=HHMM)
    quiet_end: str | None = Field(default=None, pattern=HHMM)
    timezone: str = Field(
        default="UTC",
        min_length=1,
        max_length=64,
        description="An IANA time zone, such as Europe/Paris.",
        json_schema_extra={"enum": TIME_ZONES},
    )
    enabled: bool = True

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _named(value)

    @field_validator("digest_hour", mode="before")
    @classmethod
    def _whole_hour(cls, value: object) -> object:
        """JSON Schema's `integer` admits 16.0, which a strict `int` refuses: taken as 16."""
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    @field_validator("kinds")
    @classmethod
    def _unique_kinds(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    @field_validator("channel_ids")
    @classmethod
    def _ids(cls, value: list[str]) -> list[str]:
        for item in value:
            if len(item) > 64 or not re.fullmatch(ID_PATTERN, item):
                raise ValueError("channel_ids must be channel ids such as chn_...")
        return list(dict.fromkeys(value))

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError) as err:
            raise ValueError(
                f"unknown time zone {value!r}; use an IANA name such as Europe/Paris"
            ) from err
        return value

    @model_validator(mode="after")
    def _quiet_pair(self) -> MonitorRule:
        if (self.quiet_start is None) != (self.quiet_end is None):
            raise ValueError("give both quiet_start and quiet_end, or neither")
        return self  # the same time twice is an empty window: no quiet hours


class RuleIn(MonitorRule):
    """A rule of the workspace: a monitor's own (`monitor_id`), or a workspace default."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=_quiet_pair_schema)

    monitor_id: str | None = Field(
        default=None, max_length=64, pattern=ID_PATTERN,
        description="The monitor this rule is for; null for a workspace default (used by "
        "every monitor with no rule of its own).",
    )  # fmt: skip


class RuleFiltersOut(BaseModel):
    price_min: float | None
    price_max: float | None
    brands: list[str]
    sizes: list[str]
    conditions: list[str]
    include_keywords: list[str]
    exclude_keywords: list[str]
    exclude_sellers: list[str]
    business: bool | None
    min_confidence: Literal["any", "low", "medium", "high"]


class RuleOut(BaseModel):
    id: str
    name: str
    kinds: list[NotifyKindName]
    monitor_id: str | None
    deal_ratio: float
    filters: RuleFiltersOut
    channel_ids: list[str]
    mode: Literal["instant", "digest"]
    digest_hour: int
    quiet_start: str | None
    quiet_end: str | None
    timezone: str
    enabled: bool
    created_at: datetime
    updated_at: datetime


class RuleList(BaseModel):
    rules: list[RuleOut]


class RulesQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    monitor_id: str | None = Field(default=None, max_length=64, pattern=ID_PATTERN)


class DeliveriesQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    channel_id: str | None = Field(default=None, max_length=64, pattern=ID_PATTERN)
    page: int = Field(default=1, ge=1, le=MAX_PAGE)


class NotificationsQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    monitor_id: str | None = Field(default=None, max_length=64, pattern=ID_PATTERN)
    status: Literal["pending", "delivered", "failed"] | None = None
    page: int = Field(default=1, ge=1, le=MAX_PAGE)


class DeliveryOut(BaseModel):
    id: int
    channel_id: str
    attempted_at: datetime
    notification_ids: list[str]
    ok: bool
    status_code: int | None
    latency_ms: int
    error: str | None
    test: bool


class DeliveryPage(BaseModel):
    deliveries: list[DeliveryOut]
    page: int
    total: int
    pages: int


class NotificationOut(BaseModel):
    id: str
    monitor_id: str | None
    rule_id: str | None
    channel_id: str
    kind: str
    subject: str
    payload: dict[str, Any]
    created_at: datetime
    due_at: datetime
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    next_attempt_at: datetime | None
    delivered_at: datetime | None
    last_error: str | None


class NotificationPage(BaseModel):
    notifications: list[NotificationOut]
    page: int
    total: int
    pages: int
