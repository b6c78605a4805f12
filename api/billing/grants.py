"""Entitlements given without payment: the `--demo` account's trial (operators' grants go
through `nichescope plans grant`, see `cli.py`)."""

from __future__ import annotations

from datetime import timedelta

from api.billing.plans import TRIAL_PLAN, configured_plans
from api.settings import Settings
from store import Entitlement, Store


async def grant_trial(store: Store, settings: Settings, workspace_id: str) -> bool:
    """Start a `settings.trial_days` trial for a workspace that has never had a plan.

    Returns False (and changes nothing) if the workspace already had one, so calling it at
    every start does not extend the trial. No trial claim is recorded: this is not the
    e-mail-confirmed trial of a customer.
    """
    await store.billing.seed_plans(configured_plans(settings))
    account = await store.billing.account(workspace_id)
    if account is not None and account.plan is not None:
        return False
    ends = store.clock() + timedelta(days=settings.trial_days)
    outcome = await store.billing.apply(
        workspace_id,
        Entitlement(
            plan=TRIAL_PLAN,
            status="trialing",
            source="trial",
            current_period_end=ends,
            trial_end=ends,
        ),
        cause="demo account trial",
    )
    return outcome == "applied"
