"""Paying never checks less often: every plan's minimum poll interval is at most the plan's
below it, whatever one plan's override says (the demo's billing page once offered a trial
checking every 5 s and a Pro plan every 60 s)."""

from __future__ import annotations

import itertools

import pytest

from api.billing.plans import TRIAL_PLAN, configured_plans
from api.process.demo import DEMO_MIN_POLL_SECONDS, demo_settings
from api.settings import Settings
from scrapers.simulator import SimOrigins
from store import PlanRecord

BASE = Settings(secret_key="k", stripe_price_starter="price_s", stripe_price_pro="price_p")
DEMO = demo_settings(BASE, SimOrigins(site="http://127.0.0.1:8100", api="http://127.0.0.1:8101"))


def _coherent(plans: list[PlanRecord]) -> None:
    trial = next(p for p in plans if p.name == TRIAL_PLAN)
    paid = [p for p in plans if p.price_cents > 0]
    assert paid, plans
    for plan in paid:
        assert plan.min_poll_seconds <= trial.min_poll_seconds, (plan.name, plans)
    ordered = sorted(plans, key=lambda p: p.position)
    for below, above in itertools.pairwise(ordered):
        assert above.min_poll_seconds <= below.min_poll_seconds, (below, above)


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param(BASE, id="defaults"),
        pytest.param(DEMO, id="demo"),
        pytest.param(
            BASE.model_copy(update={"plan_quotas": {"trial": {"min_poll_seconds": 30}}}),
            id="a fast trial",
        ),
        pytest.param(
            BASE.model_copy(update={"plan_quotas": {"pro": {"min_poll_seconds": 3600}}}),
            id="a slow pro",
        ),
    ],
)
def test_paid_plans_never_check_less_often_than_the_trial(settings: Settings) -> None:
    _coherent(configured_plans(settings))


def test_the_demo_keeps_its_fast_trial_and_speeds_the_paid_plans_up() -> None:
    plans = {p.name: p for p in configured_plans(DEMO)}
    assert plans[TRIAL_PLAN].min_poll_seconds == DEMO_MIN_POLL_SECONDS
    assert plans["starter"].min_poll_seconds == plans["pro"].min_poll_seconds == 5
    # Without overrides nothing moves: 600 s, 300 s, 60 s.
    defaults = [p.min_poll_seconds for p in configured_plans(BASE)]
    assert defaults == [600, 300, 60]
