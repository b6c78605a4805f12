"""The quota API the monitor and run endpoints call, against real databases (both)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from api.billing.plans import configured_plans
from api.billing.quotas import (
    NO_PLAN,
    PlanLimits,
    PlanRequired,
    QuotaExceeded,
    limits_of,
    plan_limits,
    require_items_per_run,
    require_poll_interval,
    require_quota,
    usage,
)
from api.http.security import new_id
from api.settings import Settings
from store import BillingAccountRecord, Entitlement, NewRun, NewUser, Store

SETTINGS = Settings(secret_key="k", stripe_price_starter="price_s", stripe_price_pro="price_p")


async def _workspace(store: Store) -> str:
    user = await store.create_user(
        NewUser(
            user_id=new_id("usr"),
            workspace_id=new_id("ws"),
            email=f"{new_id('q')}@example.com",
            name=None,
            password_hash=None,
        )
    )
    return user.workspace_id


async def _on_plan(store: Store, plan: str | None, **changes: object) -> str:
    await store.billing.seed_plans(configured_plans(SETTINGS))
    workspace_id = await _workspace(store)
    if plan is not None:
        entitlement = Entitlement(plan=plan, status="active", source="grant")
        await store.billing.apply(
            workspace_id, dataclasses.replace(entitlement, **changes), cause="test"
        )
    return workspace_id


async def test_a_workspace_without_a_plan_can_read_but_not_create(store: Store) -> None:
    workspace_id = await _on_plan(store, None)
    limits = await plan_limits(workspace_id, store=store)
    assert limits == NO_PLAN and limits.can_create is False
    for check in (
        require_quota(workspace_id, "active_monitors", 0, store=store),
        require_quota(workspace_id, "runs_per_day", 0, store=store),
        require_items_per_run(workspace_id, 1, store=store),
        require_poll_interval(workspace_id, 3600, store=store),
    ):
        with pytest.raises(PlanRequired) as caught:
            await check
        assert caught.value.status == 403 and caught.value.code == "plan_required"
        assert caught.value.extra["upgrade_to"] == "starter"
    assert await usage(workspace_id, store=store) == (
        type(await usage(workspace_id, store=store))(active_monitors=0, runs_today=0)
    )


@pytest.mark.parametrize(
    ("quota", "limit", "upgrade", "upgrade_limit", "words"),
    [
        ("active_monitors", 5, "pro", 25, "5 active monitors; 5 are active"),
        ("runs_per_day", 50, "pro", 500, "50 analysis runs a day (UTC); 50 started today"),
    ],
)
async def test_count_quotas_allow_up_to_the_limit(
    store: Store, quota: str, limit: int, upgrade: str, upgrade_limit: int, words: str
) -> None:
    workspace_id = await _on_plan(store, "starter")
    limits = await require_quota(workspace_id, quota, limit - 1, store=store)  # type: ignore[arg-type]
    assert isinstance(limits, PlanLimits) and limits.name == "starter"
    with pytest.raises(QuotaExceeded) as caught:
        await require_quota(workspace_id, quota, limit, store=store)  # type: ignore[arg-type]
    err = caught.value
    assert err.status == 403 and err.code == "quota_exceeded"
    assert err.extra == {
        "quota": quota,
        "limit": limit,
        "in_use": limit,
        "requested": limit + 1,
        "plan": "starter",
        "upgrade_to": upgrade,
        "upgrade_limit": upgrade_limit,
        "upgrade_purchasable": True,
    }
    assert err.message.startswith(f"The Starter plan allows {words}"), err.message
    assert f"The Pro plan allows {upgrade_limit} " in err.message
    assert upgrade in err.suggest[0] and "checkout" in err.suggest[0]


async def test_the_largest_plan_names_no_upgrade(store: Store) -> None:
    workspace_id = await _on_plan(store, "pro")
    with pytest.raises(QuotaExceeded) as caught:
        await require_quota(workspace_id, "active_monitors", 25, store=store)
    assert caught.value.extra["upgrade_to"] is None
    assert caught.value.message.endswith("There is no larger plan.")
    assert "checkout" not in " ".join(caught.value.suggest)


async def test_items_per_run_and_poll_interval(store: Store) -> None:
    workspace_id = await _on_plan(store, "starter")
    await require_items_per_run(workspace_id, 1000, store=store)
    with pytest.raises(QuotaExceeded) as items:
        await require_items_per_run(workspace_id, 1001, store=store)
    assert items.value.extra["quota"] == "items_per_run"
    assert items.value.extra["upgrade_to"] == "pro"
    await require_poll_interval(workspace_id, 300, store=store)
    with pytest.raises(QuotaExceeded) as poll:
        await require_poll_interval(workspace_id, 299, store=store)
    assert poll.value.extra["quota"] == "min_poll_seconds"
    assert poll.value.extra["limit"] == 300 and poll.value.extra["upgrade_to"] == "pro"


async def test_trial_quotas_and_the_trial_running_out(store: Store) -> None:
    soon = store.clock() + timedelta(days=7)
    workspace_id = await _on_plan(
        store, "trial", status="trialing", source="trial", current_period_end=soon, trial_end=soon
    )
    limits = await plan_limits(workspace_id, store=store)
    assert (limits.name, limits.active_monitors, limits.can_create) == ("trial", 2, True)
    with pytest.raises(QuotaExceeded) as caught:
        await require_quota(workspace_id, "active_monitors", 2, store=store)
    assert caught.value.extra["upgrade_to"] == "starter"
    account = await store.billing.account(workspace_id)
    assert account is not None
    later = limits_of(account, await store.billing.plans(), soon + timedelta(seconds=1))
    assert later.can_create is False and later.status == "expired"


def test_stripe_statuses_decide_entitlement() -> None:
    plans = configured_plans(SETTINGS)
    now = datetime.now(UTC)

    def account(status: str) -> BillingAccountRecord:
        return BillingAccountRecord(
            workspace_id="ws",
            plan="pro",
            status=status,
            source="stripe",
            stripe_customer_id="cus",
            stripe_subscription_id="sub",
            current_period_end=now - timedelta(days=1),  # renewals arrive late: status decides
            cancel_at_period_end=False,
            trial_end=None,
            updated_at=now,
        )

    assert limits_of(account("active"), plans, now).can_create is True
    assert limits_of(account("trialing"), plans, now).can_create is True
    for status in ("past_due", "canceled", "unpaid", "incomplete", "incomplete_expired"):
        assert limits_of(account(status), plans, now).can_create is False, status
    assert limits_of(None, plans, now) == NO_PLAN


async def test_usage_counts_what_quotas_count(store: Store) -> None:
    workspace_id = await _on_plan(store, "starter")
    for n in range(3):
        await store.runs.create(
            NewRun(
                run_id=new_id("run"),
                workspace_id=workspace_id,
                label=f"r{n}",
                source="url",
                url="https://example.com/catalog",
                monitor_id=None,
                max_items=10,
            )
        )
    used = await usage(workspace_id, store=store)
    assert used.runs_today == 3 and used.active_monitors == 0
    await require_quota(workspace_id, "runs_per_day", used.runs_today, store=store)


async def test_seeding_is_idempotent_and_follows_configuration(store: Store) -> None:
    await store.billing.seed_plans(configured_plans(SETTINGS))
    await store.billing.seed_plans(configured_plans(SETTINGS))
    unpriced = SETTINGS.model_copy(update={"stripe_price_pro": ""})
    await store.billing.seed_plans(configured_plans(unpriced))
    plans = {p.name: p for p in await store.billing.plans()}
    assert list(plans) == ["trial", "starter", "pro"]
    assert plans["pro"].purchasable is False and plans["starter"].stripe_price_id == "price_s"


async def test_the_demo_trial_is_granted_once(store: Store) -> None:
    from api.billing.grants import grant_trial

    workspace_id = await _workspace(store)
    assert await grant_trial(store, SETTINGS, workspace_id) is True
    assert await grant_trial(store, SETTINGS, workspace_id) is False
    limits = await plan_limits(workspace_id, store=store)
    assert limits.name == "trial" and limits.can_create
    assert len(await store.billing.changes(workspace_id)) == 1


async def _on_unsold_trial(store: Store) -> str:
    """A trial workspace on a server without payments: no plan can be bought (the demo)."""
    unsold = SETTINGS.model_copy(update={"stripe_price_starter": "", "stripe_price_pro": ""})
    await store.billing.seed_plans(configured_plans(unsold))
    workspace_id = await _workspace(store)
    trial = Entitlement(plan="trial", status="trialing", source="grant")
    await store.billing.apply(workspace_id, trial, cause="test")
    return workspace_id


@pytest.mark.parametrize(
    ("quota", "requested", "situation", "next_plan", "next_words"),
    [
        (
            "items_per_run",
            960,
            "The Trial plan reads at most 200 listings per run; this run asks for 960.",
            "starter",
            "The Starter plan allows 1000 listings per run, but it is not on sale",
        ),
        (
            "items_per_run",
            2000,
            "this run asks for 2000.",
            "pro",
            "The Pro plan allows 5000 listings per run",
        ),
        ("items_per_run", 6000, "asks for 6000.", None, "No plan allows 6000 listings per run."),
        (
            "min_poll_seconds",
            300,
            "The Trial plan checks a monitor at most every 600 s; this one asks for a check "
            "every 300 s.",
            "starter",
            "The Starter plan allows a check every 300 s at the fastest",
        ),
        ("min_poll_seconds", 60, "every 60 s.", "pro", "The Pro plan allows a check every 60 s"),
        (
            "min_poll_seconds",
            10,
            "every 10 s.",
            None,
            "No plan allows a check every 10 s at the fastest.",
        ),
        (
            "active_monitors",
            2,
            "The Trial plan allows 2 active monitors; 2 are active or starting.",
            "starter",
            "The Starter plan allows 5 active monitors",
        ),
        (
            "runs_per_day",
            10,
            "The Trial plan allows 10 analysis runs a day (UTC); 10 started today.",
            "starter",
            "The Starter plan allows 50 analysis runs a day (UTC)",
        ),
    ],
    ids=["items", "items-pro", "items-none", "poll", "poll-pro", "poll-none", "monitors", "runs"],
)
async def test_every_quota_message_names_the_limit_and_the_next_plan_up(
    store: Store,
    quota: str,
    requested: int,
    situation: str,
    next_plan: str | None,
    next_words: str,
) -> None:
    """Plans not on sale here (no payment set up) are still named, with who can grant them;
    the trial is never "the largest plan" while larger ones exist."""
    workspace_id = await _on_unsold_trial(store)
    with pytest.raises(QuotaExceeded) as caught:
        if quota == "items_per_run":
            await require_items_per_run(workspace_id, requested, store=store)
        elif quota == "min_poll_seconds":
            await require_poll_interval(workspace_id, requested, store=store)
        else:
            await require_quota(workspace_id, quota, requested, store=store)  # type: ignore[arg-type]
    err = caught.value
    assert situation in err.message and next_words in err.message, err.message
    assert "largest plan" not in err.message
    assert err.extra["upgrade_to"] == next_plan and err.extra["upgrade_purchasable"] is False
    if next_plan is not None:
        assert "operator" in err.message and f"'{next_plan}'" in err.suggest[0]
    # Nothing to buy here: no advice to check out, and a way on within the plan.
    assert not any("checkout" in advice for advice in err.suggest)
    assert err.suggest[-1]
