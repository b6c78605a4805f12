"""The plan catalogue, from configuration; seeded into the database at start-up."""

from __future__ import annotations

import dataclasses

from api.settings import Settings
from store import PlanRecord

TRIAL_PLAN = "trial"


def configured_plans(settings: Settings) -> list[PlanRecord]:
    """trial, starter and pro, with quotas overridable by `NICHESCOPE_PLAN_QUOTAS`. A paid plan
    is purchasable only with its Stripe price id set; no plan polls faster than the
    service-wide `min_poll_seconds`, and none less often than a plan below it."""
    floor = settings.min_poll_seconds

    def plan(
        position: int,
        name: str,
        title: str,
        price_id: str | None,
        price_cents: int,
        monitors: int,
        runs: int,
        items: int,
        poll: int,
    ) -> PlanRecord:
        overrides = settings.plan_quotas.get(name, {})
        monitors = overrides.get("active_monitors", monitors)
        runs = overrides.get("runs_per_day", runs)
        items = overrides.get("items_per_run", items)
        poll = overrides.get("min_poll_seconds", poll)
        return PlanRecord(
            name=name,
            title=title,
            position=position,
            stripe_price_id=price_id or None,
            price_cents=price_cents,
            currency="eur",
            interval="month" if price_cents else None,
            purchasable=bool(price_id),
            active_monitors=monitors,
            runs_per_day=runs,
            items_per_run=items,
            min_poll_seconds=max(floor, poll),
        )

    return never_slower_up(
        [
            plan(0, TRIAL_PLAN, f"Trial ({settings.trial_days} days)", None, 0, 2, 10, 200, 600),
            plan(1, "starter", "Starter", settings.stripe_price_starter, 1900, 5, 50, 1000, 300),
            plan(2, "pro", "Pro", settings.stripe_price_pro, 4900, 25, 500, 5000, 60),
        ]
    )


def never_slower_up(plans: list[PlanRecord]) -> list[PlanRecord]:
    """`plans` by position, none checking less often than a plan below it: a plan whose
    minimum poll interval is longer takes the fastest below it. Why: an override of one plan
    (`NICHESCOPE_PLAN_QUOTAS`, or `--demo`'s 5 s trial) left Pro at 60 s under a 5 s trial,
    so paying looked like a downgrade."""
    kept: list[PlanRecord] = []
    for each in sorted(plans, key=lambda p: p.position):
        fastest_below = min((p.min_poll_seconds for p in kept), default=each.min_poll_seconds)
        if each.min_poll_seconds > fastest_below:
            each = dataclasses.replace(each, min_poll_seconds=fastest_below)
        kept.append(each)
    return kept


# What one unit of each quota is, for the sentences that tell a person about a limit.
QUOTA_UNITS = {
    "active_monitors": ("active monitor", "active monitors"),
    "runs_per_day": ("analysis run a day (UTC)", "analysis runs a day (UTC)"),
    "items_per_run": ("listing per run", "listings per run"),
}


def plan_name(name: str | None) -> str:
    """`trial` -> `Trial`: how a sentence names a plan (the configured title carries extras
    such as the trial's length that do not read well mid-sentence)."""
    return (name or "current").capitalize()


def allowance(quota: str, value: int) -> str:
    """What `value` of `quota` allows, in words: `200 listings per run`, `a check every 600 s`."""
    if quota == "min_poll_seconds":
        return f"a check every {value} s at the fastest"
    one, many = QUOTA_UNITS.get(quota, (quota, quota))
    return f"{value} {one if value == 1 else many}"
