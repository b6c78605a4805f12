"""The trio-facing facade of billing: `store.billing`."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from . import queries as repo
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

if TYPE_CHECKING:
    from .._store import Store


class BillingStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def seed_plans(self, plans: list[PlanRecord]) -> None:
        now = self._store.clock()
        await self._store.unit(lambda db: repo.seed_plans(db, plans, now))

    async def plans(self) -> list[PlanRecord]:
        return await self._store.unit(repo.list_plans)

    async def plan(self, name: str) -> PlanRecord | None:
        return await self._store.unit(lambda db: repo.get_plan(db, name))

    async def account(self, workspace_id: str) -> BillingAccountRecord | None:
        return await self._store.unit(lambda db: repo.get_account(db, workspace_id))

    async def set_customer(self, workspace_id: str, customer_id: str) -> str:
        now = self._store.clock()
        return await self._store.unit(
            lambda db: repo.set_customer(db, workspace_id, customer_id, now)
        )

    async def workspace_of_customer(self, customer_id: str) -> str | None:
        return await self._store.unit(lambda db: repo.workspace_of_customer(db, customer_id))

    async def apply(
        self,
        workspace_id: str,
        entitlement: Entitlement,
        *,
        cause: str,
        event: StripeEventKey | None = None,
        session_id: str | None = None,
    ) -> ApplyOutcome:
        now = self._store.clock()
        return await self._store.unit(
            lambda db: repo.apply(
                db,
                workspace_id,
                entitlement,
                cause=cause,
                now=now,
                event=event,
                session_id=session_id,
            )
        )

    async def record_event(self, event: StripeEventKey) -> bool:
        now = self._store.clock()
        return await self._store.unit(lambda db: repo.record_event(db, event, now))

    async def changes(self, workspace_id: str) -> list[BillingChangeRecord]:
        return await self._store.unit(lambda db: repo.changes(db, workspace_id))

    async def add_checkout_session(self, new: NewCheckoutSession) -> None:
        now = self._store.clock()
        await self._store.unit(lambda db: repo.add_checkout_session(db, new, now))

    async def checkout_session(self, session_id: str) -> CheckoutSessionRecord | None:
        return await self._store.unit(lambda db: repo.get_checkout_session(db, session_id))

    async def latest_checkout_session(
        self, workspace_id: str, user_id: str
    ) -> CheckoutSessionRecord | None:
        return await self._store.unit(
            lambda db: repo.latest_checkout_session(db, workspace_id, user_id)
        )

    async def trial_taken(self, workspace_id: str, email: str) -> bool:
        return await self._store.unit(lambda db: repo.trial_taken(db, workspace_id, email))

    async def add_trial_token(self, new: NewTrialToken) -> None:
        now = self._store.clock()
        await self._store.unit(lambda db: repo.add_trial_token(db, new, now))

    async def confirm_trial(
        self, token_hash: str, *, trial_end: datetime, plan: str
    ) -> tuple[TrialOutcome, str | None]:
        now = self._store.clock()
        return await self._store.unit(
            lambda db: repo.confirm_trial(db, token_hash, now, trial_end, plan)
        )
