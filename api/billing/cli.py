"""Operator commands: `nichescope plans list` and `nichescope plans grant EMAIL PLAN [--days N]`.

A grant gives a workspace a plan by hand (support cases), recorded in the billing ledger like
any other change; without `--days` it lasts until changed. It does not touch Stripe.
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any

import trio

from api.billing.plans import configured_plans
from api.settings import Settings
from store import Entitlement, open_store


def add_plan_commands(subparsers: Any) -> None:
    """Add `plans list|grant` to the `nichescope` parser's subcommands."""
    plans = subparsers.add_parser("plans", help="list plans, grant a plan to an account")
    plans.add_argument("--database-url", help="overrides NICHESCOPE_DATABASE_URL")
    actions = plans.add_subparsers(dest="plans_command", required=True)
    actions.add_parser("list", help="list plans with prices and quotas")
    grant = actions.add_parser("grant", help="give an account's workspace a plan")
    grant.add_argument("email")
    grant.add_argument("plan")
    grant.add_argument("--days", type=int, default=None, help="ends after N days (default: never)")


def run_plan_command(args: argparse.Namespace, settings: Settings) -> int:
    """Run `plans ...`; returns the process exit code (0 ok, 1 refused)."""
    return trio.run(_run, args, settings)


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(
        settings.database_url, run_migrations=settings.database_url.startswith("sqlite")
    ) as store:
        await store.billing.seed_plans(configured_plans(settings))
        plans = await store.billing.plans()
        if args.plans_command == "list":
            print(
                f"{'plan':<10}{'price':>10}  {'buy':<4}{'monitors':>9}{'runs/day':>9}"
                f"{'items/run':>10}{'min poll s':>11}"
            )
            for p in plans:
                price = f"{p.price_cents / 100:.2f} {p.currency}" if p.price_cents else "free"
                print(
                    f"{p.name:<10}{price:>10}  {'yes' if p.purchasable else 'no':<4}"
                    f"{p.active_monitors:>9}{p.runs_per_day:>9}{p.items_per_run:>10}"
                    f"{p.min_poll_seconds:>11}"
                )
            return 0
        plan = next((p for p in plans if p.name == args.plan), None)
        if plan is None:
            print(f"no plan named {args.plan!r}; see `nichescope plans list`")
            return 1
        if args.days is not None and args.days <= 0:
            print("--days must be positive")
            return 1
        credentials = await store.get_credentials(args.email.strip().lower())
        if credentials is None:
            print(f"no account with e-mail {args.email!r}")
            return 1
        ends = store.clock() + timedelta(days=args.days) if args.days else None
        workspace_id = credentials.user.workspace_id
        await store.billing.apply(
            workspace_id,
            Entitlement(plan=plan.name, status="active", source="grant", current_period_end=ends),
            cause=f"granted by operator ({args.days or 'no'} days)",
        )
        until = ends.isoformat(timespec="minutes") if ends else "further notice"
        print(f"granted {plan.name} to {args.email} (workspace {workspace_id}) until {until}")
        return 0
