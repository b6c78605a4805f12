"""The Engine with real stores (SQLite and PostgreSQL) and an in-memory marketplace."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta

import pytest
import trio

from engine import Engine, EngineSettings, MonitorPolicy, RestartPolicy, open_engine
from engine.monitors._actor import INTERNAL_FAILURE
from store import MonitorRecord, NewMonitor, Store
from tests.conftest import new_workspace
from tests.engine.fake_market import FakeMarket, StateLookupFailed
from tests.waiting import eventually

FAST = EngineSettings(
    monitor_policy=MonitorPolicy(max_consecutive_errors=3, max_backoff_seconds=0.2),
    restart_policy=RestartPolicy(base_seconds=0.05, cap_seconds=0.2),
    grace_seconds=2,
)


async def _start(
    engine: Engine, workspace_id: str, interval: int = 1, page_cap: int = 2
) -> MonitorRecord:
    new = NewMonitor(
        monitor_id=f"mon_{uuid.uuid4().hex[:12]}",
        workspace_id=workspace_id,
        url="https://www.vinted.fr/catalog?brand_ids[]=53",
        label=None,
        interval_seconds=interval,
        page_cap=page_cap,
    )
    return await engine.start_monitor(new)


async def _until(check: Callable[[], Awaitable[bool]], seconds: float = 10) -> None:
    with trio.fail_after(seconds):
        while not await check():
            await trio.sleep(0.05)


async def _status_is(store: Store, monitor_id: str, wanted: str) -> bool:
    monitor = await store.monitors.get(monitor_id, None)
    assert monitor is not None
    return monitor.status == wanted


async def _until_status(
    store: Store, monitor: MonitorRecord, wanted: str, seconds: float = 10
) -> None:
    """Wait until the stored monitor's status is `wanted`."""
    await _until(lambda: _status_is(store, monitor.id, wanted), seconds)


async def test_monitor_bootstraps_then_tracks_transitions(store: Store) -> None:
    market = FakeMarket()
    for item in range(1, 6):
        market.list(item)
    workspace = await new_workspace(store)
    async with open_engine(store, market, FAST) as engine:
        monitor = await _start(engine, workspace)
        assert monitor.status == "paused" and monitor.bootstrapped_at is None

        await _until_status(store, monitor, "active")
        assert (await store.monitors.state_counts(monitor.id))["open"] == 5
        market.states[1] = "sold"
        market.states[2] = "reserved"
        market.states[3] = "deleted"
        market.list(6)
        assert await engine.poll_now(monitor.id)

        async def settled() -> bool:
            return await store.monitors.state_counts(monitor.id) == {
                "open": 3,
                "reserved": 1,
                "sold": 1,
                "deleted": 1,
            }

        await _until(settled)
        statuses = engine.actors()
        assert [s.monitor_id for s in statuses] == [monitor.id]
        assert statuses[0].workspace_id == workspace and statuses[0].restarts == 0


async def test_listing_out_of_the_feed_window_is_not_a_sale(store: Store) -> None:
    market = FakeMarket(feed_window=2)
    market.list(1)
    market.list(2)
    workspace = await new_workspace(store)
    async with open_engine(store, market, FAST) as engine:
        monitor = await _start(engine, workspace)

        await _until_status(store, monitor, "active")
        market.list(3)  # pushes item 1 out of the two-item feed window; it is still for sale
        await engine.poll_now(monitor.id)

        async def asked() -> bool:
            return (
                market.detail_calls >= 1
                and (await store.monitors.state_counts(monitor.id))["open"] == 3
            )

        await _until(asked)
    listing = (await store.monitors.listings(monitor.id, ["open"], 1, 10)).listings[0]
    assert listing.item_id == 1 and listing.in_feed is False
    kinds = [e.kind async for e in store.monitors.iter_events(monitor.id)]
    assert kinds == ["new", "new", "new"]  # no state event for the confirmed-open listing


async def test_errors_back_off_then_stop_and_resume_recovers(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """An error nobody classified (a fault of ours) shows the reseller a plain sentence,
    never its text (a driver's SQL and parameters, say): that goes to the log."""
    market = FakeMarket(feed_error=RuntimeError("INSERT INTO notifications ... rul_secret"))
    market.list(1)
    workspace = await new_workspace(store)
    async with open_engine(store, market, FAST) as engine:
        monitor = await _start(engine, workspace)

        await _until_status(store, monitor, "error")
        failed = await store.monitors.get(monitor.id, workspace)
        assert failed is not None and failed.consecutive_errors == 3
        assert failed.last_error == INTERNAL_FAILURE
        assert "rul_secret" in caplog.text  # the operators' log has it
        calls = market.feed_calls
        await trio.sleep(0.5)  # absence: no poll may happen in this while
        assert market.feed_calls == calls  # in `error`, the actor waits its long retry
        assert engine.is_running(monitor.id)  # ...but it is alive and listening
        assert failed.next_poll_at is not None
        assert failed.next_poll_at - store.clock() > timedelta(minutes=50)

        market.feed_error = None
        await engine.resume(failed)

        async def recovered() -> bool:
            m = await store.monitors.get(monitor.id, workspace)
            return (
                m is not None
                and m.status == "active"
                and m.consecutive_errors == 0
                and m.polls == 1
            )

        await _until(recovered)


async def test_restart_resumes_monitors_without_duplicates(store: Store) -> None:
    market = FakeMarket()
    market.list(1)
    workspace = await new_workspace(store)
    async with open_engine(store, market, FAST) as engine:
        monitor = await _start(engine, workspace, interval=60)

        await _until_status(store, monitor, "active")
    assert not engine.is_running(monitor.id)
    market.states[1] = "sold"
    async with open_engine(store, market, FAST) as engine:
        with trio.fail_after(60):
            await engine.resumed.wait()
        assert engine.is_running(monitor.id)  # re-spawned from the database
        await engine.poll_now(monitor.id)

        async def sold() -> bool:
            return (await store.monitors.state_counts(monitor.id))["sold"] == 1

        await _until(sold)
    events = [(e.item_id, e.kind, e.to_state) async for e in store.monitors.iter_events(monitor.id)]
    assert events == [(1, "new", "open"), (1, "state", "sold")]


async def test_pause_stops_polling_and_delete_stops_the_actor(store: Store) -> None:
    market = FakeMarket()
    market.list(1)
    workspace = await new_workspace(store)
    async with open_engine(store, market, FAST) as engine:
        monitor = await _start(engine, workspace)

        await _until_status(store, monitor, "active")
        await engine.pause(monitor)
        # The actor has taken the pause (a poll it had in flight finished) and sits idle.
        await eventually(lambda: [s.state for s in engine.actors()] == ["paused"])
        calls = market.feed_calls
        await trio.sleep(1.5)  # absence: no poll may happen in this while (interval: 1 s)
        assert market.feed_calls == calls
        assert await engine.delete_monitor(monitor)
        assert not engine.is_running(monitor.id)
        assert await store.monitors.get(monitor.id, workspace) is None


async def test_shutdown_waits_for_the_poll_in_flight(store: Store) -> None:
    market = FakeMarket(gate=trio.Event())
    market.list(1)
    workspace = await new_workspace(store)
    async with open_engine(store, market, FAST) as engine:
        monitor = await _start(engine, workspace)
        await _until(lambda: _true_if(market.feed_calls >= 1))
        market.gate.set()  # type: ignore[union-attr]
    # The poll that was in flight at shutdown was finished and recorded, not cut off.
    recorded = await store.monitors.get(monitor.id, workspace)
    assert recorded is not None and recorded.polls == 1


async def _true_if(value: bool) -> bool:
    return value


def _erring_after_two(*, max_backoff_seconds: float, error_retry_seconds: float) -> EngineSettings:
    """FAST, but a monitor goes to `error` after two failed polls of its own."""
    policy = MonitorPolicy(
        max_consecutive_errors=2,
        max_backoff_seconds=max_backoff_seconds,
        error_retry_seconds=error_retry_seconds,
    )
    return dataclasses.replace(FAST, monitor_policy=policy)


async def test_a_monitor_in_error_keeps_trying_and_comes_back_by_itself(store: Store) -> None:
    market = FakeMarket(feed_error=RuntimeError("503 frozen"))
    market.list(1)
    workspace = await new_workspace(store)
    retrying = _erring_after_two(max_backoff_seconds=0.1, error_retry_seconds=0.5)
    async with open_engine(store, market, retrying) as engine:
        monitor = await _start(engine, workspace)
        await _until_status(store, monitor, "error", 30)
        calls = market.feed_calls
        await _until(lambda: _more(market, calls), 30)  # still trying, on the long retry
        market.feed_error = None  # the marketplace answers again: no resume needed
        await _until_status(store, monitor, "active", 30)
        back = await store.monitors.get(monitor.id, workspace)
        assert back is not None and back.consecutive_errors == 0 and back.polls >= 1


async def _more(market: FakeMarket, calls: int) -> bool:
    return market.feed_calls > calls


async def test_a_marketplace_outage_never_parks_a_monitor_in_error(store: Store) -> None:
    """Issue 33 item 8: five failed polls that are the marketplace's (an outage) leave the
    monitor `active`, trying within three intervals; the first answer is polled at once,
    not an hour later."""
    market = FakeMarket(feed_error=StateLookupFailed("unavailable"))
    market.list(1)
    workspace = await new_workspace(store)
    patient = _erring_after_two(max_backoff_seconds=3600, error_retry_seconds=3600)
    async with open_engine(store, market, patient) as engine:
        monitor = await _start(engine, workspace)
        await _until(lambda: _true_if(market.feed_calls >= 5), 60)
        failing = await store.monitors.get(monitor.id, workspace)
        assert failing is not None and failing.status != "error"
        assert failing.consecutive_errors >= 4 and failing.last_error_kind == "unavailable"
        market.feed_error = None  # the marketplace answers again
        answered = trio.current_time()
        await _until_status(store, monitor, "active", 30)
        await _until(lambda: _polled(store, monitor.id, workspace), 30)
        assert trio.current_time() - answered <= 3 * 1 + 5  # three intervals, and slack


async def _polled(store: Store, monitor_id: str, workspace: str) -> bool:
    record = await store.monitors.get(monitor_id, workspace)
    return record is not None and record.polls >= 1 and record.consecutive_errors == 0
