"""A row deleted while another transaction writes beside it (PostgreSQL). The writer locks
what it writes under before it writes, so the deletion waits for it, or it waits for the
deletion and then finds nothing: never an integrity error (a 500) or a deadlock (a 503).
Each test holds the deletion midway, runs the writer until it waits, then finishes the
deletion (`tests/store/holding.py`)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
import trio
from sqlalchemy import text
from sqlalchemy.orm import Session

from store import NewRun, NewUser, Store, open_store
from tests.store.holding import beside, holding, until_waiting
from tests.store.notify_helpers import new_channel, new_monitor

pytestmark = pytest.mark.postgres


async def test_a_channel_tested_while_it_is_deleted_logs_nothing(postgres_url: str) -> None:
    """The channel's deletion holds the channel when the API logs a test sent to it: the
    log waits for the channel, then finds it gone (False: nothing logged), where it read the
    channel, waited to update its health and failed on the vanished row."""
    async with open_store(postgres_url) as store:
        _, workspace_id = await new_monitor(store)
        channel = await new_channel(store, workspace_id)
        logged: list[bool] = []

        async def log_test() -> None:
            logged.append(
                await store.notify.log_test(workspace_id, channel.id, True, 200, 12, None)
            )

        with holding(postgres_url) as deleting, trio.fail_after(60):
            held = "SELECT id FROM notification_channels WHERE id = :c FOR UPDATE"
            deleting.execute(text(held), {"c": channel.id})  # as delete_channel, first
            async with beside(deleting) as nursery:
                nursery.start_soon(log_test)
                await until_waiting(deleting, unless=logged)
                await trio.to_thread.run_sync(
                    _commit_after, deleting, "DELETE FROM notification_channels WHERE id = :i",
                    channel.id,
                )  # fmt: skip
        assert logged == [False]


async def test_an_analysis_pinned_while_its_run_is_deleted_is_not_pinned(
    postgres_url: str,
) -> None:
    """The run's deletion holds the analysis when the workspace pins it: the pin waits for
    the analysis and then finds it gone (False), where its insert failed on the foreign key."""
    async with open_store(postgres_url) as store:
        workspace_id, analysis_id = await _analysis(store)
        pinned: list[bool] = []

        async def pin() -> None:
            pinned.append(await store.runs.pin(workspace_id, analysis_id))

        with holding(postgres_url) as deleting, trio.fail_after(60):
            held = "SELECT id FROM analyses WHERE id = :a FOR UPDATE"
            deleting.execute(text(held), {"a": analysis_id})  # as delete_run's DELETE
            async with beside(deleting) as nursery:
                nursery.start_soon(pin)
                await until_waiting(deleting, unless=pinned)
                await trio.to_thread.run_sync(
                    _commit_after, deleting, "DELETE FROM analyses WHERE id = :i", analysis_id
                )
        assert pinned == [False]
        assert await store.runs.pinned(workspace_id) is None


async def test_a_reset_link_used_while_an_identity_claims_the_address_waits_for_it(
    postgres_url: str,
) -> None:
    """An identity provider's sign-in takes over an unproven account (it holds the user,
    then deletes the user's reset links) while the reset link is used: the reset waits for
    the user, then finds its link gone (None: nothing changed), where it held the link,
    waited for the user, and the two deadlocked."""
    async with open_store(postgres_url) as store:
        suffix = uuid.uuid4().hex[:12]
        user = await store.create_user(NewUser(
            user_id=f"usr_{suffix}", workspace_id=f"ws_{suffix}",
            email=f"{suffix}@example.com", name=None, password_hash="h",
        ))  # fmt: skip
        expires_at = store.clock() + timedelta(hours=1)
        await store.add_password_reset(token_hash="r" * 64, user_id=user.id, expires_at=expires_at)
        reset: list[object] = []

        async def use_link() -> None:
            reset.append(await store.reset_password("r" * 64, "new hash", revoke_tokens=False))

        with holding(postgres_url) as claiming, trio.fail_after(60):
            held = "SELECT id FROM users WHERE id = :u FOR UPDATE"
            claiming.execute(text(held), {"u": user.id})  # as claim_for_identity, first
            async with beside(claiming) as nursery:
                nursery.start_soon(use_link)
                await until_waiting(claiming, unless=reset)
                await trio.to_thread.run_sync(
                    _commit_after, claiming, "DELETE FROM password_resets WHERE user_id = :i",
                    user.id,
                )  # fmt: skip
        assert reset == [None]


def _commit_after(session: Session, statement: str, row_id: str) -> None:
    """The rest of the held side: one statement about `row_id`, then commit."""
    session.execute(text(statement), {"i": row_id})
    session.commit()


async def _analysis(store: Store) -> tuple[str, str]:
    """(workspace, analysis) of a finished run."""
    _, workspace_id = await new_monitor(store)
    run = await store.runs.create(NewRun(
        run_id=f"run_{uuid.uuid4().hex[:12]}", workspace_id=workspace_id, label="run",
        source="scrape", url="https://www.vinted.fr/catalog", monitor_id=None, max_items=10,
    ))  # fmt: skip
    await store.runs.mark_running(run.id)
    analysis_id = f"ana_{uuid.uuid4().hex[:12]}"
    await store.runs.succeed_with_analysis(
        run, analysis_id=analysis_id, source="scrape", result_json='{"niches": []}', items=3
    )
    return workspace_id, analysis_id
