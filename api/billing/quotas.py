"""Plan limits and quota checks: what the monitor and run endpoints call before creating.

A workspace is entitled by a Stripe subscription (status `active` or `trialing`), a trial or
an operator's grant (until its end). Without one it can read its data but create nothing:
`can_create` is False and every `require_*` raises `PlanRequired`.

Each check takes the `store=` it reads: a handler passes the app's, a test or the CLI its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from api.billing.plans import allowance, plan_name
from api.http.errors import ApiError
from store import BillingAccountRecord, PlanRecord, QuotaFull, Store

Quota = Literal["active_monitors", "runs_per_day"]
ACTIVE_STRIPE_STATUSES = frozenset({"active", "trialing"})


@dataclass(frozen=True, slots=True)
class PlanLimits:
    name: str | None
    active_monitors: int
    runs_per_day: int
    items_per_run: int
    min_poll_seconds: int
    can_create: bool
    status: str = "none"
    ends_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    active_monitors: int
    runs_today: int


NO_PLAN = PlanLimits(
    name=None,
    active_monitors=0,
    runs_per_day=0,
    items_per_run=0,
    min_poll_seconds=0,
    can_create=False,
)


class QuotaExceeded(ApiError):
    """Over a plan's limit. The message says what the plan allows, what was asked, and the
    next plan up that allows it (by position, on sale here or not) or that none does; the
    envelope carries the same as data (`upgrade_to` null when no plan allows it)."""

    status, code, docs_url = 403, "quota_exceeded", "/docs#billing"

    def __init__(
        self,
        quota: str,
        limit: int,
        in_use: int,
        plan: str | None,
        better: PlanRecord | None,
        *,
        requested: int,
        larger_plans: bool,
    ) -> None:
        message = _situation(quota, limit, in_use, requested, plan)
        suggest: list[str] = []
        if better is not None:
            message += f" The {plan_name(better.name)} plan allows "
            message += allowance(quota, getattr(better, quota))
            if better.purchasable:
                message += "."
                suggest.append(f"Upgrade to the '{better.name}' plan: POST /api/billing/checkout")
            else:
                message += ", but it is not on sale on this server: its operator can grant it."
                suggest.append(f"Ask the operator of this server for the '{better.name}' plan")
        elif larger_plans:
            message += f" No plan allows {allowance(quota, requested)}."
        else:
            message += " There is no larger plan."
        suggest.append(_REMEDIES[quota].format(limit=limit))
        super().__init__(
            message,
            suggest=suggest,
            extra={
                "quota": quota,
                "limit": limit,
                "in_use": in_use,
                "requested": requested,
                "plan": plan,
                "upgrade_to": better.name if better else None,
                "upgrade_limit": getattr(better, quota) if better else None,
                "upgrade_purchasable": better.purchasable if better else False,
            },
        )


# What a person can do within the current plan, per quota.
_REMEDIES = {
    "active_monitors": "Pause or delete a monitor you no longer need",
    "runs_per_day": "Wait until 00:00 UTC, when the count of the day starts again",
    "items_per_run": "Ask for at most {limit} listings, or leave max_items out for {limit}",
    "min_poll_seconds": "Check every {limit} s or less often, or leave interval_seconds out "
    "for the plan's default",
}


def _situation(quota: str, limit: int, in_use: int, requested: int, plan: str | None) -> str:
    name = plan_name(plan)
    if quota == "active_monitors":
        active = f"{in_use} {'is' if in_use == 1 else 'are'} active or starting"
        return f"The {name} plan allows {allowance(quota, limit)}; {active}."
    if quota == "runs_per_day":
        return f"The {name} plan allows {allowance(quota, limit)}; {in_use} started today."
    if quota == "items_per_run":
        return (
            f"The {name} plan reads at most {allowance(quota, limit)}; "
            f"this run asks for {requested}."
        )
    return (
        f"The {name} plan checks a monitor at most every {limit} s; "
        f"this one asks for a check every {requested} s."
    )


class PlanRequired(ApiError):
    status, code, docs_url = 403, "plan_required", "/docs#billing"

    def __init__(self, status: str, upgrade_to: str | None) -> None:
        super().__init__(
            "This workspace has no active plan or trial: it can read its data but not create",
            suggest=[
                "Start the free trial: POST /api/billing/trial/start",
                # Only where a plan can be bought: advice that cannot be followed is noise.
                *(["Or subscribe: POST /api/billing/checkout"] if upgrade_to else []),
            ],
            extra={"subscription_status": status, "upgrade_to": upgrade_to},
        )


def limits_of(
    account: BillingAccountRecord | None, plans: list[PlanRecord], now: datetime
) -> PlanLimits:
    """The limits an account is entitled to at `now` (pure: no I/O)."""
    if account is None or account.plan is None:
        return NO_PLAN
    plan = next((p for p in plans if p.name == account.plan), None)
    if account.source == "stripe":
        entitled = account.status in ACTIVE_STRIPE_STATUSES
    else:
        entitled = account.status in ACTIVE_STRIPE_STATUSES and (
            account.current_period_end is None or account.current_period_end > now
        )
    if plan is None or not entitled:
        # NO_PLAN's limits, but the account's own plan name, status and end.
        return replace(
            NO_PLAN,
            name=account.plan,
            status=_status(account, now),
            ends_at=account.current_period_end,
        )
    return PlanLimits(
        name=plan.name,
        active_monitors=plan.active_monitors,
        runs_per_day=plan.runs_per_day,
        items_per_run=plan.items_per_run,
        min_poll_seconds=plan.min_poll_seconds,
        can_create=True,
        status=account.status,
        ends_at=account.current_period_end,
    )


def _status(account: BillingAccountRecord, now: datetime) -> str:
    if account.source in {"trial", "grant"} and (
        account.current_period_end is not None and account.current_period_end <= now
    ):
        return "expired"
    return account.status


def upgrade_for(plans: list[PlanRecord], current: str | None, quota: str, limit: int) -> str | None:
    """The first purchasable plan, above the current one, with more of `quota`."""
    for plan in sorted(plans, key=lambda p: p.position):
        if plan.purchasable and plan.name != current and getattr(plan, quota) > limit:
            return plan.name
    return None


async def plan_limits(workspace_id: str, *, store: Store) -> PlanLimits:
    """The workspace's current limits (NO_PLAN-like, `can_create=False`, without a plan)."""
    account = await store.billing.account(workspace_id)
    return limits_of(account, await store.billing.plans(), store.clock())


async def _check(
    workspace_id: str,
    quota: str,
    requested: int,
    store: Store,
    *,
    at_most: bool,
    shown: int | None = None,
) -> PlanLimits:
    plans = await store.billing.plans()
    limits = limits_of(await store.billing.account(workspace_id), plans, store.clock())
    if not limits.can_create:
        raise PlanRequired(limits.status, upgrade_for(plans, None, quota, 0))
    limit = getattr(limits, quota)
    over = requested > limit if at_most else requested < limit
    if over:
        shown = requested if shown is None else shown
        raise _exceeded(plans, limits.name, quota, limit, shown, requested)
    return limits


def _exceeded(
    plans: list[PlanRecord], plan: str | None, quota: str, limit: int, shown: int, requested: int
) -> QuotaExceeded:
    above = _plans_above(plans, plan)
    better = next((p for p in above if _allows(p, quota, requested)), None)
    return QuotaExceeded(
        quota, limit, shown, plan, better, requested=requested, larger_plans=bool(above)
    )


async def refused(workspace_id: str, full: QuotaFull, *, store: Store) -> QuotaExceeded:
    """The 403 `quota_exceeded` for a write the database refused at the plan's limit
    (`QuotaFull`, counted under the workspace's quota lock: see `store/accounts/quotas.py`): what
    `require_quota` answers at the same usage. The check before the write passed on a count
    that simultaneous requests shared; this is the one that holds."""
    plans = await store.billing.plans()
    limits = limits_of(await store.billing.account(workspace_id), plans, store.clock())
    return _exceeded(plans, limits.name, full.quota, full.limit, full.in_use, full.in_use + 1)


def _plans_above(plans: list[PlanRecord], current: str | None) -> list[PlanRecord]:
    """The plans after `current` in the catalogue's order (all of them without one)."""
    ordered = sorted(plans, key=lambda p: p.position)
    here = next((p.position for p in ordered if p.name == current), None)
    return [p for p in ordered if here is None or p.position > here]


def _allows(plan: PlanRecord, quota: str, requested: int) -> bool:
    if quota == "min_poll_seconds":
        return plan.min_poll_seconds <= requested
    return int(getattr(plan, quota)) >= requested


async def require_quota(
    workspace_id: str, quota: Quota, in_use: int, *, store: Store
) -> PlanLimits:
    """Allow creating one more of `quota` when `in_use` exist now (monitors that are active,
    runs created since 00:00 UTC); raises `QuotaExceeded` (403) at the limit, `PlanRequired`
    (403) without a plan. Returns the limits, for the caller's other checks."""
    if quota not in ("active_monitors", "runs_per_day"):
        raise ValueError(f"unknown quota {quota!r}")
    return await _check(workspace_id, quota, in_use + 1, store, at_most=True, shown=in_use)


async def require_items_per_run(workspace_id: str, items: int, *, store: Store) -> PlanLimits:
    """Allow a run (or monitor poll) that asks for `items` listings."""
    return await _check(workspace_id, "items_per_run", items, store, at_most=True)


async def require_poll_interval(workspace_id: str, seconds: int, *, store: Store) -> PlanLimits:
    """Allow a monitor polling every `seconds` (not faster than the plan's minimum)."""
    return await _check(workspace_id, "min_poll_seconds", seconds, store, at_most=False)


async def usage(workspace_id: str, *, store: Store) -> Usage:
    """What counts against the quotas now: active monitors, runs created today (UTC)."""
    now = store.clock()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    assert midnight <= now < midnight + timedelta(days=1)
    return Usage(
        active_monitors=await store.monitors.count_active(workspace_id),
        runs_today=await store.runs.count_since(workspace_id, midnight),
    )
