"""`/health`'s probes of the database: shared while one runs, never reused after it ended."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from api.ops.readiness import Readiness
from store import DatabaseUnavailable


class Database:
    """A ping that answers (or fails) when told to, counting the probes."""

    def __init__(self) -> None:
        self.pings = 0
        self.answer = trio.Event()
        self.down = False

    async def ping(self) -> None:
        self.pings += 1
        await self.answer.wait()
        if self.down:
            raise DatabaseUnavailable("refused")


async def _ask_many(readiness: Readiness, database: Database, n: int) -> list[bool]:
    answers: list[bool] = []

    async def ask() -> None:
        answers.append(await readiness.ready(database.ping))

    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        database.answer.set()
    return answers


@pytest.mark.parametrize("down", [False, True])
async def test_requests_at_the_same_moment_share_one_probe(down: bool) -> None:
    database = Database()
    database.down = down
    answers = await _ask_many(Readiness(timeout=30), database, 20)
    assert answers == [not down] * 20
    assert database.pings == 1


async def test_a_request_after_a_probe_ended_probes_again() -> None:
    readiness, database = Readiness(timeout=30), Database()
    database.answer.set()
    assert await readiness.ready(database.ping) is True
    database.down = True
    assert await readiness.ready(database.ping) is False  # not the answer before
    assert database.pings == 2


async def test_when_the_probing_request_is_cancelled_the_others_probe_again() -> None:
    readiness, database = Readiness(timeout=30), Database()
    answers: list[bool] = []
    leaving = trio.CancelScope()

    async def leader() -> None:
        with leaving:  # its client leaves while it probes
            await readiness.ready(database.ping)

    async def ask() -> None:
        answers.append(await readiness.ready(database.ping))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(leader)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(ask)
        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        assert database.pings == 1
        leaving.cancel()
        await trio.testing.wait_all_tasks_blocked()
        database.answer.set()
    assert answers == [True, True]
    assert database.pings == 2  # the cancelled probe, then one for both waiters


async def test_a_database_that_hangs_is_not_ready() -> None:
    database = Database()  # never answers
    with trio.fail_after(30):
        assert await Readiness(timeout=0.05).ready(database.ping) is False
