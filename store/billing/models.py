"""Billing tables: plans, each workspace's billing account, checkout sessions, processed
payment-provider events, the effect ledger, and the e-mail-confirmed trial."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from .._db.base import Base, UtcDateTime


class Plan(Base):
    """A plan and its quotas; seeded from configuration at start-up (upsert by name)."""

    __tablename__ = "plans"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    title: Mapped[str] = mapped_column(String(100))
    position: Mapped[int] = mapped_column(Integer)
    stripe_price_id: Mapped[str | None] = mapped_column(String(100))
    price_cents: Mapped[int] = mapped_column(Integer)
    currency: Mapped[str] = mapped_column(String(3))
    interval: Mapped[str | None] = mapped_column(String(16))
    purchasable: Mapped[bool] = mapped_column(Boolean)
    active_monitors: Mapped[int] = mapped_column(Integer)
    runs_per_day: Mapped[int] = mapped_column(Integer)
    items_per_run: Mapped[int] = mapped_column(Integer)
    min_poll_seconds: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class BillingAccount(Base):
    """What a workspace is entitled to, and its customer at the payment provider."""

    __tablename__ = "billing_accounts"

    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    plan: Mapped[str | None] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(24))
    source: Mapped[str | None] = mapped_column(String(16))
    stripe_customer_id: Mapped[str | None] = mapped_column(String(255), unique=True)
    stripe_subscription_id: Mapped[str | None] = mapped_column(String(255))
    current_period_end: Mapped[datetime | None] = mapped_column(UtcDateTime())
    cancel_at_period_end: Mapped[bool] = mapped_column(Boolean, default=False)
    trial_end: Mapped[datetime | None] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class CheckoutSession(Base):
    """A Checkout Session we created, with who created it: sync trusts only these."""

    __tablename__ = "checkout_sessions"
    __table_args__ = (
        Index("ix_checkout_sessions_workspace", "workspace_id", "created_at"),
        Index("ix_checkout_sessions_user", "user_id"),
    )

    id: Mapped[str] = mapped_column(String(255), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    plan: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    fulfilled_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class StripeEvent(Base):
    """A webhook event already applied; its id is the deduplication key."""

    __tablename__ = "stripe_events"

    id: Mapped[str] = mapped_column(String(255), primary_key=True)
    type: Mapped[str] = mapped_column(String(100))
    received_at: Mapped[datetime] = mapped_column(UtcDateTime())


class BillingChange(Base):
    """One line per change of a workspace's entitlement: the audit trail of every effect."""

    __tablename__ = "billing_changes"
    __table_args__ = (Index("ix_billing_changes_workspace", "workspace_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    cause: Mapped[str] = mapped_column(String(255))
    plan: Mapped[str | None] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(24))


class TrialToken(Base):
    """An e-mailed trial confirmation; only the keyed digest of the token is kept."""

    __tablename__ = "trial_tokens"
    __table_args__ = (Index("ix_trial_tokens_user", "user_id"),)

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class TrialClaim(Base):
    """A trial taken: the unique keys make it once per e-mail and once per workspace, even
    under concurrent confirmations."""

    __tablename__ = "trial_claims"

    email: Mapped[str] = mapped_column(String(320), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), unique=True
    )
    claimed_at: Mapped[datetime] = mapped_column(UtcDateTime())
