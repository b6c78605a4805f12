"""Actors own their state: `pause`/`resume` are commands the monitor's actor carries out and
answers; a command it cannot take now is `EngineBusy` with nothing changed; commands between
nodes are the same values, serialised by a codec that refuses what it does not know; and an
actor is ready when the call that started it returns."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

from engine import (
    Cancel,
    Engine,
    EngineBusy,
    EngineSettings,
    MonitorPolicy,
    Pause,
    PollNow,
    Resume,
    Stop,
    open_engine,
)
from engine.cluster import CODEC, CommandRefused, decode_command, encode_command
from engine.cluster._codec import CommandCodec
from engine.monitors import ActorStatusBoard, MonitorActor
from engine.monitors._commands import Envelope
from engine.monitors._registry import COMMAND_BUFFER
from store import CommandRecord, MonitorRecord, Store
from store.cluster.models import ClusterCommand
from tests.conftest import new_monitor, new_workspace
from tests.engine.fake_market import FakeMarket
from tests.engine.test_engine import FAST, _start, _until, _until_status


async def _active(engine: Engine, store: Store, workspace: str) -> MonitorRecord:
    """A monitor past its bootstrap, `active`, its next poll an hour away."""
    monitor = await _start(engine, workspace, interval=3600)
    await _until_status(store, monitor, "active")
    fresh = await store.monitors.get(monitor.id, workspace)
    assert fresh is not None
    return fresh


@asynccontextmanager
async def _engine_with_a_monitor(
    store: Store, settings: EngineSettings = FAST
) -> AsyncIterator[tuple[Engine, FakeMarket, MonitorRecord]]:
    """An engine on a market of one listing, and a monitor of it `active` (`_active`)."""
    market = FakeMarket()
    market.list(1)
    workspace = await new_workspace(store)
    async with open_engine(store, market, settings) as engine:
        yield engine, market, await _active(engine, store, workspace)


async def _poll_in_flight(engine: Engine, market: FakeMarket, monitor_id: str) -> trio.Event:
    """Hold the actor in a poll (it takes no command meanwhile); set the gate to let it go."""
    gate = trio.Event()
    market.gate = gate
    calls = market.feed_calls
    assert await engine.poll_now(monitor_id)
    await _until(lambda: _const(market.feed_calls > calls))
    return gate


async def _const(value: bool) -> bool:
    return value


async def _status(store: Store, monitor_id: str) -> str:
    monitor = await store.monitors.get(monitor_id, None)
    assert monitor is not None
    return monitor.status


def _queue_depth(engine: Engine, monitor_id: str) -> int:
    return next(a.queue_depth for a in engine.actors() if a.monitor_id == monitor_id)


# -- the actor writes, then answers ------------------------------------------------------------


async def test_pause_is_answered_only_after_the_actor_wrote_the_status(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _engine_with_a_monitor(store) as (engine, market, monitor):
        seen: list[tuple[str, trio.lowlevel.Task]] = []
        write = store.monitors.set_status

        async def recorded(monitor_id: str, status: str, **kwargs: bool) -> None:
            await write(monitor_id, status, **kwargs)  # type: ignore[arg-type]
            seen.append((f"wrote {status}", trio.lowlevel.current_task()))

        monkeypatch.setattr(store.monitors, "set_status", recorded)
        gate = await _poll_in_flight(engine, market, monitor.id)
        answered = trio.Event()

        async def pause() -> None:
            await engine.pause(monitor)
            seen.append(("answered", trio.lowlevel.current_task()))
            answered.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(pause)
            await trio.testing.wait_all_tasks_blocked()
            # The actor is in the middle of a poll: nothing written, nothing answered yet.
            assert not answered.is_set() and seen == []
            assert await _status(store, monitor.id) == "active"
            gate.set()
        assert [what for what, _ in seen] == ["wrote paused", "answered"]
        writer, caller = seen[0][1], seen[1][1]
        assert writer is not caller and "_run_supervised" in writer.name  # the actor wrote it
        assert await _status(store, monitor.id) == "paused"

        await engine.resume(monitor)  # answered once written: the status is there on return
        assert await _status(store, monitor.id) == "active"


async def test_resume_starts_an_actor_where_none_runs(store: Store) -> None:
    """A paused monitor after a restart has no actor: `resume` starts one, which writes."""
    async with _engine_with_a_monitor(store) as (engine, market, monitor):
        await engine.pause(monitor)
    async with open_engine(store, market, FAST) as engine:
        with trio.fail_after(60):
            await engine.resumed.wait()
        assert not engine.is_running(monitor.id)  # paused: nothing to re-spawn
        await engine.pause(monitor)  # nothing to do, and no actor started for it
        assert not engine.is_running(monitor.id)
        await engine.resume(monitor)
        assert engine.is_running(monitor.id)
        assert await _status(store, monitor.id) == "active"


# -- busy: nothing changed ------------------------------------------------------------------------


async def test_a_full_queue_is_busy_and_the_status_is_unchanged(store: Store) -> None:
    async with _engine_with_a_monitor(store) as (engine, market, monitor):
        gate = await _poll_in_flight(engine, market, monitor.id)
        for _ in range(COMMAND_BUFFER):
            assert await engine.poll_now(monitor.id)
        with pytest.raises(EngineBusy, match="too many commands queued"):
            await engine.pause(monitor)
        assert await _status(store, monitor.id) == "active"
        gate.set()
        # The queue drains (the polls asked for); the refused pause never comes.
        await _until(lambda: _const(_queue_depth(engine, monitor.id) == 0))
        assert await _status(store, monitor.id) == "active"


async def test_a_command_not_taken_in_time_is_withdrawn(store: Store) -> None:
    impatient = dataclasses.replace(FAST, command_timeout_seconds=0.2)
    async with _engine_with_a_monitor(store, impatient) as (engine, market, monitor):
        gate = await _poll_in_flight(engine, market, monitor.id)
        with pytest.raises(EngineBusy, match="did not take the command"):
            await engine.pause(monitor)
        assert _queue_depth(engine, monitor.id) == 1  # still queued, but withdrawn
        gate.set()
        await _until(lambda: _const(_queue_depth(engine, monitor.id) == 0))  # taken: skipped
        assert await _status(store, monitor.id) == "active"


# -- the codec ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command_type", list(CODEC.types.values()), ids=list(CODEC.types))
def test_every_remote_command_round_trips_and_fits_the_column(command_type: type) -> None:
    command = command_type()
    text = encode_command(command)
    assert text == command_type.__name__  # fieldless: its bare name
    assert decode_command(text) == command
    assert len(text) <= ClusterCommand.__table__.c.command.type.length  # type: ignore[attr-defined]


def test_the_codec_carries_the_local_command_types() -> None:
    assert set(CODEC.types.values()) == {PollNow, Pause, Resume, Stop, Cancel}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Explode",
        "pause",  # the strings of old: not a second vocabulary
        "GetStatus",
        "Envelope",
        "Pause {",
        "Pause [1]",
        'Pause {"monitor_id":"mon_1"}',
        "Pause null",
    ],
)
def test_the_codec_refuses_what_it_does_not_know(text: str) -> None:
    with pytest.raises(CommandRefused):
        decode_command(text)


def test_only_registered_commands_are_encoded() -> None:
    with pytest.raises(TypeError):
        encode_command(Envelope(Pause()))  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True, slots=True)
class Sample:
    n: int
    label: str | None = None
    ratio: float = 1.0


def test_fields_travel_and_are_checked() -> None:
    codec = CommandCodec([Sample])
    for sample in (Sample(3), Sample(0, "x", 0.5), Sample(-1, None, 2)):
        text = codec.encode(sample)
        assert text.startswith("Sample {") and codec.decode(text) == sample
    assert codec.decode('Sample {"n":1}') == Sample(1)
    for bad in (
        "Sample {}",  # n is required
        'Sample {"n":"1"}',
        'Sample {"n":true}',
        'Sample {"n":1.5}',
        'Sample {"n":1,"label":2}',
        'Sample {"n":1,"other":2}',
        'Sample {"n":1,"ratio":"fast"}',
    ):
        with pytest.raises(CommandRefused):
            codec.decode(bad)


async def test_a_refused_cluster_command_is_logged_and_changes_nothing(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    async with _engine_with_a_monitor(store) as (engine, _market, monitor):
        caplog.set_level(logging.WARNING, logger="engine._engine")
        late = FAST.command_timeout_seconds + 1
        for i, (kind, text, age) in enumerate(
            [
                ("monitor", "Explode", 0.0),
                ("monitor", 'Pause {"x":1}', 0.0),
                ("monitor", "Cancel", 0.0),  # a run's command
                ("run", "Pause", 0.0),  # a monitor's command
                ("monitor", "Pause", late),  # its sender gave up on it
            ]
        ):
            engine.deliver(CommandRecord(i, kind, monitor.id, text, age_seconds=age))  # type: ignore[arg-type]
            assert _queue_depth(engine, monitor.id) == 0
        messages = [r.getMessage() for r in caplog.records]
        assert sum("refused" in m for m in messages) == 4, messages
        assert any("came too late" in m for m in messages), messages
        assert engine.is_running(monitor.id)
        assert await _status(store, monitor.id) == "active"

        engine.deliver(CommandRecord(9, "monitor", monitor.id, "Pause", age_seconds=0.0))
        await _until_status(store, monitor, "paused")


# -- ready when started ---------------------------------------------------------------------------


async def test_an_actor_is_ready_when_start_returns(store: Store) -> None:
    monitor = await new_monitor(
        store, url="https://www.vinted.fr/catalog?brand_ids[]=53", interval_seconds=3600, page_cap=1
    )
    send, receive = trio.open_memory_channel[Envelope](4)
    board = ActorStatusBoard(monitor.id, monitor.workspace_id, send)
    actor = MonitorActor(
        monitor.id,
        store=store,
        market=FakeMarket(gate=trio.Event()),  # its first poll waits here for ever
        commands=receive,
        policy=MonitorPolicy(),
        status=board,
        poll_slots=trio.CapacityLimiter(1),
        initial=monitor,
    )
    assert board.snapshot().state == "starting"
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.run)
        assert board.snapshot().state == "idle"  # scheduled and on the board, no checkpoint since
        nursery.cancel_scope.cancel()

    market = FakeMarket()
    market.list(1)
    async with open_engine(store, market, FAST) as engine:
        handle = await engine.spawn_monitor(monitor)
        assert handle.ready.is_set() and handle.board.snapshot().state == "idle"
        assert engine.is_running(monitor.id)
