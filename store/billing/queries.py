"""Billing repository functions: each takes the unit of work's session (see `facade.py`).

Concurrency: every writing function starts with a write (an idempotent insert), so on SQLite
the transaction holds the write lock before it reads, and on PostgreSQL the account row is
then locked with `SELECT ... FOR UPDATE`. Two fulfilments of the same workspace therefore run
one after the other and the second sees what the first wrote.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from .._db.rows import new_row, record_fields, to_record
from ..accounts.confirmations import mark_email_proven
from .models import (
    BillingAccount,
    BillingChange,
    CheckoutSession,
    Plan,
    StripeEvent,
    TrialClaim,
    TrialToken,
)
from .records import (
    ApplyOutcome,
    BillingAccountRecord,
    BillingChangeRecord,
    CheckoutSessionRecord,
    Entitlement,
    NewCheckoutSession,
    NewTrialToken,
    PlanRecord,
    StripeEventKey,
    TrialOutcome,
)


def _insert_ignore(db: Session, model: type[Any], values: dict[str, Any]) -> bool:
    """INSERT, doing nothing on a key conflict; True if a row went in."""
    dialect = db.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    # psycopg reports an INSERT's row count only when asked to keep it.
    ignoring = insert(model).values(**values).on_conflict_do_nothing()
    result = db.execute(ignoring.execution_options(preserve_rowcount=True))
    return bool(result.rowcount)  # type: ignore[attr-defined]


def _plan(row: Plan) -> PlanRecord:
    return to_record(PlanRecord, row)


def _account(row: BillingAccount) -> BillingAccountRecord:
    return to_record(BillingAccountRecord, row)


def _session(row: CheckoutSession) -> CheckoutSessionRecord:
    return to_record(CheckoutSessionRecord, row)


# -- plans -------------------------------------------------------------------------------------


def seed_plans(db: Session, plans: list[PlanRecord], now: datetime) -> None:
    """Insert or update every configured plan (by name); safe when several nodes seed at
    once. Plans no longer configured stay (workspaces on them keep resolving) but can no
    longer be bought."""
    for plan in plans:
        values = asdict(plan) | {"updated_at": now}
        if not _insert_ignore(db, Plan, values):
            db.execute(update(Plan).where(Plan.name == plan.name).values(**values))
    names = [plan.name for plan in plans]
    db.execute(update(Plan).where(Plan.name.not_in(names)).values(purchasable=False))


def list_plans(db: Session) -> list[PlanRecord]:
    rows = db.scalars(select(Plan).order_by(Plan.position, Plan.name))
    return [_plan(row) for row in rows]


def get_plan(db: Session, name: str) -> PlanRecord | None:
    row = db.get(Plan, name)
    return _plan(row) if row is not None else None


# -- accounts ----------------------------------------------------------------------------------


def get_account(db: Session, workspace_id: str) -> BillingAccountRecord | None:
    row = db.get(BillingAccount, workspace_id)
    return _account(row) if row is not None else None


def _locked_account(db: Session, workspace_id: str, now: datetime) -> BillingAccount:
    _insert_ignore(
        db,
        BillingAccount,
        {
            "workspace_id": workspace_id,
            "status": "none",
            "cancel_at_period_end": False,
            "updated_at": now,
        },
    )
    row = db.scalar(
        select(BillingAccount)
        .where(BillingAccount.workspace_id == workspace_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    assert row is not None
    return row


def set_customer(db: Session, workspace_id: str, customer_id: str, now: datetime) -> str:
    """Record the workspace's customer unless it has one already; returns the one kept."""
    row = _locked_account(db, workspace_id, now)
    if row.stripe_customer_id is None:
        row.stripe_customer_id = customer_id
        row.updated_at = now
    return row.stripe_customer_id


def workspace_of_customer(db: Session, customer_id: str) -> str | None:
    return db.scalar(
        select(BillingAccount.workspace_id).where(BillingAccount.stripe_customer_id == customer_id)
    )


def apply(
    db: Session,
    workspace_id: str,
    entitlement: Entitlement,
    *,
    cause: str,
    now: datetime,
    event: StripeEventKey | None = None,
    session_id: str | None = None,
) -> ApplyOutcome:
    """Make the workspace's entitlement `entitlement`: the one fulfilment write.

    With `event`, the event id is recorded in the same transaction and an id seen before
    changes nothing ("duplicate"). With `session_id`, that checkout session is marked
    fulfilled (once). A change is written to the ledger only when something differs.
    """
    if event is not None and not _insert_ignore(
        db, StripeEvent, {"id": event.id, "type": event.type, "received_at": now}
    ):
        return "duplicate"
    row = _locked_account(db, workspace_id, now)
    if session_id is not None:
        db.execute(
            update(CheckoutSession)
            .where(CheckoutSession.id == session_id, CheckoutSession.fulfilled_at.is_(None))
            .values(fulfilled_at=now)
        )
    if to_record(Entitlement, row) == entitlement:
        return "unchanged"
    for name, value in record_fields(entitlement).items():
        setattr(row, name, value)
    row.updated_at = now
    db.add(
        BillingChange(
            workspace_id=workspace_id,
            at=now,
            cause=cause[:255],
            plan=entitlement.plan,
            status=entitlement.status,
        )
    )
    return "applied"


def record_event(db: Session, event: StripeEventKey, now: datetime) -> bool:
    """Record an event that has no effect on any account; False if it was seen before."""
    return _insert_ignore(db, StripeEvent, {"id": event.id, "type": event.type, "received_at": now})


def changes(db: Session, workspace_id: str) -> list[BillingChangeRecord]:
    rows = db.scalars(
        select(BillingChange)
        .where(BillingChange.workspace_id == workspace_id)
        .order_by(BillingChange.id)
    )
    return [to_record(BillingChangeRecord, r) for r in rows]


# -- checkout sessions -------------------------------------------------------------------------


def add_checkout_session(db: Session, new: NewCheckoutSession, now: datetime) -> None:
    db.add(new_row(CheckoutSession, new, "session_id", created_at=now))


def get_checkout_session(db: Session, session_id: str) -> CheckoutSessionRecord | None:
    row = db.get(CheckoutSession, session_id)
    return _session(row) if row is not None else None


def latest_checkout_session(
    db: Session, workspace_id: str, user_id: str
) -> CheckoutSessionRecord | None:
    row = db.scalar(
        select(CheckoutSession)
        .where(CheckoutSession.workspace_id == workspace_id, CheckoutSession.user_id == user_id)
        .order_by(CheckoutSession.created_at.desc())
        .limit(1)
    )
    return _session(row) if row is not None else None


# -- trial -------------------------------------------------------------------------------------


def trial_taken(db: Session, workspace_id: str, email: str) -> bool:
    row = db.scalar(
        select(TrialClaim.email).where(
            (TrialClaim.workspace_id == workspace_id) | (TrialClaim.email == email)
        )
    )
    return row is not None


def add_trial_token(db: Session, new: NewTrialToken, now: datetime) -> None:
    db.add(TrialToken(created_at=now, **record_fields(new)))


def confirm_trial(
    db: Session, token_hash: str, now: datetime, trial_end: datetime, plan: str
) -> tuple[TrialOutcome, str | None]:
    """Use a trial token and start the trial; (outcome, workspace id).

    The token is spent by a conditional UPDATE (so two clicks cannot both pass); the claim's
    unique keys make the trial once per e-mail and once per workspace.
    """
    spent = db.execute(
        update(TrialToken)
        .where(
            TrialToken.token_hash == token_hash,
            TrialToken.used_at.is_(None),
            TrialToken.expires_at > now,
        )
        .values(used_at=now)
    )
    token = db.get(TrialToken, token_hash)
    if token is None:
        return "unknown_token", None
    if not spent.rowcount:  # type: ignore[attr-defined]
        return ("used_token" if token.used_at is not None else "expired_token"), None
    # The link reached its address: when that is the account's own, it is proven now.
    mark_email_proven(db, token.user_id, token.email, now)
    workspace_id = token.workspace_id
    account = _locked_account(db, workspace_id, now)
    if account.source == "stripe" and account.status in {"active", "trialing", "past_due"}:
        return "subscribed", workspace_id
    if not _insert_ignore(
        db, TrialClaim, {"email": token.email, "workspace_id": workspace_id, "claimed_at": now}
    ):
        return "trial_used", workspace_id
    apply(
        db,
        workspace_id,
        Entitlement(
            plan=plan,
            status="trialing",
            source="trial",
            current_period_end=trial_end,
            trial_end=trial_end,
        ),
        cause="trial confirmed",
        now=now,
    )
    return "started", workspace_id
