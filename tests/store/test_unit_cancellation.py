"""A unit of work runs in a worker thread: a cancelled caller never leaves a transaction open
or a connection checked out, and what the cancelled unit wrote is rolled back (both
databases)."""

from __future__ import annotations

import threading

import trio
from sqlalchemy import text
from sqlalchemy.orm import Session

from store import NewUser, Store
from store.accounts import queries as accounts


def _checked_out(store: Store) -> int:
    return int(store._engine.pool.checkedout())  # type: ignore[attr-defined]


async def _until(condition: threading.Event) -> None:
    with trio.fail_after(60):
        while not condition.is_set():
            await trio.sleep(0.01)


async def test_a_cancelled_unit_rolls_back_and_gives_its_connection_back(store: Store) -> None:
    entered, release = threading.Event(), threading.Event()

    def sign_up_then_wait(db: Session) -> None:
        accounts.create_user(db, NewUser(
            user_id="usr_cancelled", workspace_id="wsp_cancelled",
            email="cancelled@example.com", name=None, password_hash=None,
        ), store.clock())  # fmt: skip
        entered.set()
        release.wait(60)

    finished = trio.Event()
    scope = trio.CancelScope()

    async def caller() -> None:
        with scope:
            await store.unit(sign_up_then_wait)
        finished.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(caller)
        await _until(entered)
        assert _checked_out(store) == 1
        scope.cancel()
        # The thread cannot be interrupted: the caller waits for its unit, holding nothing
        # else, and the unit is still to decide between commit and rollback.
        await trio.sleep(0.05)  # absence: the caller must not finish in this while
        assert not finished.is_set()
        release.set()
    assert scope.cancelled_caught
    assert _checked_out(store) == 0
    assert await store.get_credentials("cancelled@example.com") is None
    # The pool is whole: the next units run, on every connection.
    assert await store.get_user("usr_cancelled") is None
    await store.ping()


async def test_a_caller_waiting_for_a_turn_is_cancelled_at_once(store: Store) -> None:
    """With every connection busy, a caller waits in Trio (not in a thread): cancelling it
    costs nothing and takes nothing from the pool."""
    release = threading.Event()
    turns = int(store._turns.total_tokens)

    async with trio.open_nursery() as nursery:
        nursery.cancel_scope.deadline = trio.current_time() + 60
        for _ in range(turns):
            started = threading.Event()

            def hold_one(db: Session, started: threading.Event = started) -> None:
                db.execute(text("SELECT 1"))  # a session takes its connection when first used
                started.set()
                release.wait(60)

            nursery.start_soon(store.unit, hold_one)
            await _until(started)
        assert _checked_out(store) == turns
        with trio.move_on_after(0.2) as waited:  # (not `ping`: on SQLite it has lanes of its own)
            await store.unit(lambda db: db.execute(text("SELECT 1")))
        release.set()  # before asserting: a failure must not leave threads waiting
        assert waited.cancelled_caught  # it waited for a turn, and went when told
    assert _checked_out(store) == 0
    await store.ping()
