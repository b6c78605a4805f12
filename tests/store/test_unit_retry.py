"""A unit PostgreSQL aborted so that another transaction could go on (a deadlock, a
serialization failure) is run again, a few times at most; any other failure is not."""

from __future__ import annotations

import threading

import pytest
import trio
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from store import DatabaseUnavailable, open_store
from store._db.unit import ABORTED_ATTEMPTS
from tests.store.holding import beside, holding, until_waiting

pytestmark = pytest.mark.postgres


async def _two_rows(store: object, table: str) -> None:
    def make(db: Session) -> None:
        db.execute(text(f"CREATE TABLE {table} (id int PRIMARY KEY, n int)"))
        db.execute(text(f"INSERT INTO {table} VALUES (1, 0), (2, 0)"))

    await store.unit(make)  # type: ignore[attr-defined]


async def test_a_deadlocked_unit_is_run_again_and_commits(postgres_url: str) -> None:
    """The unit takes row 1, then row 2, which another transaction holds; that one then
    asks for row 1. PostgreSQL aborts the unit (it waited first, so it finds the cycle
    first); the other goes on and commits, and the unit's second run commits too."""
    async with open_store(postgres_url) as store:
        await _two_rows(store, "retry_deadlock")
        runs: list[int] = []

        def both_rows(db: Session) -> None:
            runs.append(1)
            db.execute(text("UPDATE retry_deadlock SET n = n + 1 WHERE id = 1"))
            db.execute(text("UPDATE retry_deadlock SET n = n + 1 WHERE id = 2"))

        done: list[bool] = []

        async def unit() -> None:
            await store.unit(both_rows)
            done.append(True)

        with holding(postgres_url) as other, trio.fail_after(60):
            other.execute(text("SET deadlock_timeout = '20s'"))  # the unit's check comes first
            other.execute(text("UPDATE retry_deadlock SET n = n + 10 WHERE id = 2"))
            async with beside(other) as nursery:
                nursery.start_soon(unit)
                await until_waiting(other, unless=done)
                await trio.to_thread.run_sync(_row_one_and_commit, other)
        assert done == [True]
        assert len(runs) == 2
        totals = "SELECT n FROM retry_deadlock ORDER BY id"
        rows = await store.unit(lambda db: list(db.execute(text(totals)).scalars()))
        assert rows == [11, 11]  # each side's changes once, none of the aborted run's


def _row_one_and_commit(other: Session) -> None:
    other.execute(text("UPDATE retry_deadlock SET n = n + 10 WHERE id = 1"))
    other.commit()


@pytest.mark.parametrize("state", ["40P01", "40001"])
async def test_a_unit_aborted_every_time_is_unavailable_after_its_attempts(
    postgres_url: str, state: str
) -> None:
    async with open_store(postgres_url) as store:
        runs: list[int] = []

        def aborted(db: Session) -> None:
            runs.append(1)
            raise_it = f"RAISE EXCEPTION 'aborted' USING ERRCODE = '{state}'"
            db.execute(text(f"DO $$ BEGIN {raise_it}; END $$"))

        with pytest.raises(DatabaseUnavailable):
            await store.unit(aborted)
        assert len(runs) == ABORTED_ATTEMPTS


async def test_a_unit_failing_otherwise_runs_once(postgres_url: str) -> None:
    async with open_store(postgres_url) as store:
        await _two_rows(store, "retry_conflict")
        runs: list[int] = []

        def duplicate(db: Session) -> None:
            runs.append(1)
            db.execute(text("INSERT INTO retry_conflict VALUES (1, 5)"))

        with pytest.raises(IntegrityError):
            await store.unit(duplicate)
        assert len(runs) == 1


async def test_a_unit_whose_caller_was_cancelled_is_not_run_again(postgres_url: str) -> None:
    async with open_store(postgres_url) as store:
        runs: list[int] = []
        started, go = threading.Event(), threading.Event()

        def aborted(db: Session) -> None:
            runs.append(1)
            started.set()
            go.wait(60)  # until the caller is cancelled
            db.execute(text("DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '40P01'; END $$"))

        caller = trio.CancelScope()

        async def call() -> None:
            with caller:
                await store.unit(aborted)

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call)
                await trio.to_thread.run_sync(started.wait, 60)
                caller.cancel()
                go.set()
        assert caller.cancelled_caught and runs == [1]
