"""`nichescope plans list|grant` as an operator runs them, on a SQLite file."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import trio
import trio_asyncio

from api.billing.quotas import plan_limits
from api.http.security import new_id
from store import NewUser, open_store

ROOT = Path(__file__).resolve().parents[2]


async def _nichescope(database_url: str, *args: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICHESCOPE_")}
    env.update(
        NICHESCOPE_DATABASE_URL=database_url,
        NICHESCOPE_SECRET_KEY="cli-test",
        NICHESCOPE_STRIPE_PRICE_STARTER="price_s",
        NICHESCOPE_STRIPE_PRICE_PRO="price_p",
    )
    with trio.fail_after(120):
        result = await trio.run_process(
            [sys.executable, "-m", "api.process.cli", "plans", *args],
            cwd=ROOT,
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    # stdout is the answer; stderr carries the log (migrations).
    return result.returncode, result.stdout.decode()


async def test_plans_list_and_grant(tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    code, listing = await _nichescope(database_url, "list")
    assert code == 0, listing
    lines = listing.splitlines()
    assert lines[0].split()[:2] == ["plan", "price"]
    assert [line.split()[0] for line in lines[1:]] == ["trial", "starter", "pro"]
    assert "19.00 eur" in listing

    async with trio_asyncio.open_loop(), open_store(database_url) as store:
        user = await store.create_user(
            NewUser(
                user_id=new_id("usr"),
                workspace_id=new_id("ws"),
                email="help@example.com",
                name=None,
                password_hash=None,
            )
        )
    code, out = await _nichescope(database_url, "grant", "Help@Example.com", "pro", "--days", "30")
    assert code == 0, out
    assert "granted pro to Help@Example.com" in out
    async with trio_asyncio.open_loop(), open_store(database_url) as store:
        limits = await plan_limits(user.workspace_id, store=store)
        changes = await store.billing.changes(user.workspace_id)
    assert limits.name == "pro" and limits.can_create and limits.ends_at is not None
    assert changes[-1].cause.startswith("granted by operator")

    for bad in (
        ["nobody@example.com", "pro"],
        ["help@example.com", "gold"],
        ["help@example.com", "pro", "--days", "0"],
    ):
        code, out = await _nichescope(database_url, "grant", *bad)
        assert code == 1, out
