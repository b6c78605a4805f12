"""Bodies of the billing endpoints. No imports from `api.accounts.schemas`: it imports this
module."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.http.email_address import Email
from api.http.storable import document_storable_text, storable_field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=document_storable_text)

    _storable = field_validator("*", mode="after")(storable_field)


class CheckoutRequest(_Strict):
    plan: str = Field(min_length=1, max_length=32)


class TrialStartRequest(_Strict):
    email: Email


class SyncCheckoutRequest(_Strict):
    session_id: str | None = Field(default=None, min_length=1, max_length=255)


class QuotasOut(BaseModel):
    active_monitors: int
    runs_per_day: int
    items_per_run: int
    min_poll_seconds: int


class PlanOut(BaseModel):
    name: str
    title: str
    price_cents: int
    currency: str
    interval: str | None
    purchasable: bool
    quotas: QuotasOut


class PlansResponse(BaseModel):
    plans: list[PlanOut]


class UsageOut(BaseModel):
    active_monitors: int
    runs_today: int


class BillingSummary(BaseModel):
    plan: str | None
    plan_title: str | None
    status: str
    source: str | None
    can_create: bool
    trial_end: datetime | None
    current_period_end: datetime | None
    cancel_at_period_end: bool
    has_customer: bool
    quotas: QuotasOut
    usage: UsageOut


class CheckoutResponse(BaseModel):
    url: str
    session_id: str


class PortalResponse(BaseModel):
    url: str


class SyncResponse(BaseModel):
    outcome: str
    subscription: BillingSummary


class TrialStartResponse(BaseModel):
    message: str


class TrialConfirmResponse(BaseModel):
    message: str
    plan: str
    trial_end: datetime


class WebhookResponse(BaseModel):
    received: bool
    outcome: str
