"""One-for-one supervision, timed with trio's autojump clock."""

from __future__ import annotations

import itertools

import pytest
import trio
import trio.testing

from engine import RestartPolicy, supervise
from engine._commands import Command
from engine.monitors import ActorStatusBoard, MonitorStopped


def _board() -> ActorStatusBoard:
    send, _ = trio.open_memory_channel[Command](1)
    return ActorStatusBoard("mon_1", "ws_1", send)


async def test_failed_actor_restarts_with_capped_exponential_backoff(
    autojump_clock: trio.testing.MockClock,
) -> None:
    starts: list[float] = []

    async def flaky(*, task_status: trio.TaskStatus[None]) -> None:
        starts.append(trio.current_time())
        if len(starts) <= 5:
            raise RuntimeError("boom")
        raise MonitorStopped("mon_1")

    board = _board()
    await supervise("flaky", flaky, board, RestartPolicy(base_seconds=1, cap_seconds=4))
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(starts)]
    assert gaps == [1, 2, 4, 4, 4]
    assert board.snapshot().restarts == 5
    assert board.snapshot().last_error == "RuntimeError: boom"


async def test_cancellation_is_never_swallowed(autojump_clock: trio.testing.MockClock) -> None:
    async def forever(*, task_status: trio.TaskStatus[None]) -> None:
        await trio.sleep_forever()

    with trio.move_on_after(5) as scope:
        await supervise("forever", forever, _board(), RestartPolicy())
    assert scope.cancelled_caught


async def test_base_exceptions_are_not_restarted(autojump_clock: trio.testing.MockClock) -> None:
    async def interrupted(*, task_status: trio.TaskStatus[None]) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await supervise("interrupted", interrupted, _board(), RestartPolicy())


async def test_a_supervised_start_returns_once_the_actor_is_ready(
    autojump_clock: trio.testing.MockClock,
) -> None:
    runs: list[float] = []

    async def slow_to_start(*, task_status: trio.TaskStatus[None]) -> None:
        runs.append(trio.current_time())
        if len(runs) == 1:
            raise RuntimeError("not yet")  # before it was ready: restarted, the starter waits
        task_status.started()
        await trio.sleep_forever()

    board = _board()
    async with trio.open_nursery() as nursery:
        await nursery.start(supervise, "slow", slow_to_start, board, RestartPolicy(base_seconds=1))
        assert len(runs) == 2 and board.snapshot().restarts == 1
        nursery.cancel_scope.cancel()


async def test_supervision_that_ends_before_ready_releases_the_starter() -> None:
    async def stops_at_once(*, task_status: trio.TaskStatus[None]) -> None:
        raise MonitorStopped("mon_1")

    async with trio.open_nursery() as nursery:
        await nursery.start(supervise, "stops", stops_at_once, _board(), RestartPolicy())
