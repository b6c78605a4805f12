"""Cluster mode in one process: two engines (two nodes) on one PostgreSQL database.

What the three-process failover test (tests/cluster) cannot show cheaply: how work is split
and handed back, that a write under a superseded lease is refused, that commands reach the
node holding the work, and that a node which stops renewing loses its work to the other.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import trio
import trio_asyncio

from api.process.node import SecondNodeOnSqlite, open_node
from api.settings import Settings
from engine import (
    ClusterSettings,
    Engine,
    EngineSettings,
    Evidence,
    MonitorPolicy,
    RestartPolicy,
    decide_error_alerts,
    decide_poll,
    open_engine,
)
from scrapers import ClientSettings, MarketClient
from scrapers._ratelimit import TokenBucket
from store import Claim, LeaseLost, NewMonitor, NodeInfo, PollFailure, PollOutcome, Store
from tests.conftest import new_monitor, new_workspace
from tests.engine.fake_market import FakeMarket
from tests.engine.test_engine import _start, _until
from tests.waiting import eventually

pytestmark = pytest.mark.postgres

LEASE = 1.5


@pytest.fixture
def database_url(postgres_url: str) -> str:
    return postgres_url


def node_settings(node_id: str) -> EngineSettings:
    return EngineSettings(
        monitor_policy=MonitorPolicy(max_consecutive_errors=3, max_backoff_seconds=0.2),
        restart_policy=RestartPolicy(base_seconds=0.05, cap_seconds=0.2),
        grace_seconds=2,
        cluster=ClusterSettings(
            node=NodeInfo(node_id=node_id, host="test", pid=0, version="test", role="worker"),
            lease_seconds=LEASE,
        ),
    )


@asynccontextmanager
async def node(
    store: Store, node_id: str, market: FakeMarket, **kwargs: Any
) -> AsyncIterator[Engine]:
    async with open_engine(store, market, node_settings(node_id), **kwargs) as engine:
        with trio.fail_after(60):
            await engine.resumed.wait()
        yield engine


def search(brand: int) -> str:
    return f"https://www.vinted.fr/catalog?brand_ids[]={brand}"


async def _create(
    store: Store, workspace: str, count: int, interval: int = 1, url: str | None = None
) -> list[str]:
    """`count` monitors, each of a search of its own unless `url` is given."""
    ids = []
    for i in range(count):
        monitor = await new_monitor(
            store, workspace, url=url or search(1000 + i), interval_seconds=interval, page_cap=1
        )
        ids.append(monitor.id)
    return ids


async def test_two_nodes_split_the_work_and_never_share_a_monitor(store: Store) -> None:
    market = FakeMarket()
    market.list(1)
    workspace = await new_workspace(store)
    ids = await _create(store, workspace, 6)
    sizes: list[int] = []
    async with node(store, "node-a", market, on_cluster_size=sizes.append) as a:
        await _until(lambda: _const(len(a.monitor_tokens()) == 6))
        async with node(store, "node-b", market) as b:
            # A hands three back within a few heartbeats; B claims them.
            async def split() -> bool:
                held_a, held_b = set(a.monitor_tokens()), set(b.monitor_tokens())
                assert not held_a & held_b, "one monitor running on two nodes"
                return len(held_a) == len(held_b) == 3

            await _until(split, 6 * LEASE)
            assert set(a.monitor_tokens()) | set(b.monitor_tokens()) == set(ids)
            assert 2 in sizes  # politeness was told the cluster has two nodes
            nodes = await store.cluster.nodes(alive_within=LEASE)
            assert {(n.node_id, n.alive) for n in nodes} == {("node-a", True), ("node-b", True)}
        # B left gracefully: its leases were given back and A takes everything again.
        await _until(lambda: _const(len(a.monitor_tokens()) == 6), 4 * LEASE)
        assert [n.node_id for n in await store.cluster.nodes(alive_within=LEASE)] == ["node-a"]


async def _const(value: bool) -> bool:
    return value


async def test_the_monitors_of_one_search_run_on_one_node(store: Store) -> None:
    """Two searches of three monitors (three workspaces): each search whole on one node, the
    two on different nodes; a monitor that joins a search, started through the other node,
    runs where its search runs."""
    market = FakeMarket()
    market.list(1)
    workspaces = [await new_workspace(store) for _ in range(3)]
    first = [(await _create(store, w, 1, url=search(1)))[0] for w in workspaces]
    second = [(await _create(store, w, 1, url=search(2)))[0] for w in workspaces]
    async with node(store, "node-a", market) as a:
        await _until(lambda: _const(len(a.monitor_tokens()) == 6), 30)
        async with node(store, "node-b", market) as b:

            async def split_by_search() -> bool:
                held_a, held_b = set(a.monitor_tokens()), set(b.monitor_tokens())
                assert not held_a & held_b, "one monitor running on two nodes"
                return {frozenset(held_a), frozenset(held_b)} == {
                    frozenset(first),
                    frozenset(second),
                }

            await _until(split_by_search, 30)

            async def one_search_each() -> bool:  # as operators see it (/api/ops/nodes)
                nodes = await store.cluster.nodes(alive_within=60)
                return {n.node_id: n.searches for n in nodes} == {"node-a": 1, "node-b": 1}

            await _until(one_search_each, 30)
            on_b = set(b.monitor_tokens())
            b_search = search(1) if set(first) == on_b else search(2)
            new = NewMonitor(
                monitor_id=f"mon_{uuid.uuid4().hex[:12]}", workspace_id=workspaces[1],
                url=b_search, label=None, interval_seconds=3600, page_cap=1,
            )  # fmt: skip
            started = await a.start_monitor(new)
            await _until(lambda: _const(started.id in b.monitor_tokens()), 30)
            assert started.id not in a.monitor_tokens()
            assert on_b < set(b.monitor_tokens())


async def test_a_search_found_on_two_nodes_is_given_up_by_the_smaller_part(
    store: Store,
) -> None:
    workspace = await new_workspace(store)
    ids = await _create(store, workspace, 3, url=search(7))
    for monitor_id in ids[:2]:
        assert await store.cluster.claim_one("monitor", monitor_id, "node-x", 30) is not None
    # A monitor started (or resumed) through node-y is claimed there at once: a split, which
    # node-y, running fewer of the search's monitors, is to give up.
    assert await store.cluster.claim_one("monitor", ids[2], "node-y", 30) is not None
    [held_x] = await store.cluster.searches_held("node-x")
    [held_y] = await store.cluster.searches_held("node-y")
    assert (held_x.url, held_x.monitor_ids, held_x.give_up) == (
        search(7),
        tuple(sorted(ids[:2])),
        False,
    )
    assert (held_y.monitor_ids, held_y.give_up) == ((ids[2],), True)
    # Given back, the monitor is node-x's to claim, with the search, whatever its share.
    await store.cluster.release("monitor", "node-y", [ids[2]])
    claim = Claim("node-y", limit=10, held=[], lease_seconds=30)
    assert await store.cluster.claim_monitors(claim) == []
    claim = Claim("node-x", limit=0, held=ids[:2], lease_seconds=30)
    assert [m.id for m, _ in await store.cluster.claim_monitors(claim)] == [ids[2]]


async def test_a_write_under_a_superseded_lease_is_refused(store: Store) -> None:
    workspace = await new_workspace(store)
    [monitor_id] = await _create(store, workspace, 1)
    first = await store.cluster.claim_one("monitor", monitor_id, "node-a", 0.2)
    assert first is not None
    assert await store.cluster.claim_one("monitor", monitor_id, "node-b", 30) is None  # held
    # Node-a's lease lapses (a paused or partitioned node): node-b's claim then succeeds.
    claims: list[int | None] = []

    async def claimed_by_b() -> bool:
        claims.append(await store.cluster.claim_one("monitor", monitor_id, "node-b", 30))
        return claims[-1] is not None

    await eventually(claimed_by_b, what="node-b claiming the lapsed lease")
    second = claims[-1]
    assert second == first + 1
    now = store.clock()
    outcome = PollOutcome(
        poll_id=f"poll_{uuid.uuid4().hex}",
        started_at=now,
        finished_at=now,
        pages=1,
        seen=(),
        confirmed=(),
        next_poll_at=now + timedelta(seconds=60),
    )
    with pytest.raises(LeaseLost):
        await store.monitors.record_poll(monitor_id, outcome, lease_token=first, decide=decide_poll)
    monitor = await store.monitors.get(monitor_id, None)
    assert monitor is not None and monitor.polls == 0 and monitor.last_poll_at is None
    with pytest.raises(LeaseLost):
        await store.monitors.record_poll_error(
            monitor_id,
            PollFailure(
                poll_id="poll_x", started_at=now, error="boom", next_poll_at=now, max_consecutive=5
            ),
            decide=decide_error_alerts,
            lease_token=first,
        )
    await store.monitors.record_poll(monitor_id, outcome, lease_token=second, decide=decide_poll)
    monitor = await store.monitors.get(monitor_id, None)
    assert monitor is not None and monitor.polls == 1 and monitor.total_errors == 0


async def test_commands_reach_the_node_that_holds_the_monitor(store: Store) -> None:
    market = FakeMarket()
    market.list(1)
    workspace = await new_workspace(store)
    async with node(store, "node-a", market) as a, node(store, "node-b", FakeMarket()) as b:
        monitor = await _start(a, workspace, interval=3600, page_cap=1)
        assert monitor.id in a.monitor_tokens() and monitor.id not in b.monitor_tokens()
        await _until(lambda: _const(market.feed_calls == 1))  # the bootstrap poll

        # Poll now, asked of node B: node A polls (NOTIFY wakes it long before a heartbeat).
        assert await b.poll_now(monitor.id)
        with trio.fail_after(LEASE / 2):
            while market.feed_calls < 2:
                await trio.sleep(0.02)

        await b.pause(monitor)
        await _until(lambda: _const(_state(a, monitor.id) == "paused"), LEASE)
        await b.resume(monitor)
        await _until(lambda: _const(market.feed_calls >= 3), LEASE)  # resume polls at once
        assert monitor.id not in b.monitor_tokens()

        assert await b.delete_monitor(monitor)
        await _until(lambda: _const(monitor.id not in a.monitor_tokens()), 2 * LEASE)
        assert await store.monitors.get(monitor.id, None) is None


def _state(engine: Engine, monitor_id: str) -> str | None:
    return next((s.state for s in engine.actors() if s.monitor_id == monitor_id), None)


async def test_a_node_that_stops_renewing_loses_its_work_to_another(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    market = FakeMarket()
    market.list(1)
    workspace = await new_workspace(store)
    ids = await _create(store, workspace, 4, interval=1)
    async with node(store, "node-a", market) as a:
        await _until(lambda: _const(len(a.monitor_tokens()) == 4))
        # Node A dies without a word: its leases are not given back on the way out.
        monkeypatch.setattr(store.cluster, "release", _nothing)
        monkeypatch.setattr(store.cluster, "forget_node", _nothing)
    monkeypatch.undo()
    died = trio.current_time()
    async with node(store, "node-b", market) as b:
        await _until(lambda: _const(len(b.monitor_tokens()) == 4), 3 * LEASE)
        adopted_after = trio.current_time() - died
    assert adopted_after < 2 * LEASE
    assert set(b.monitor_tokens()) <= set(ids)


async def _nothing(*_args: Any, **_kwargs: Any) -> None:
    return None


async def test_a_run_is_cancelled_through_the_node_that_runs_it(store: Store) -> None:
    release = threading.Event()

    def slow_analyser(evidence: Evidence) -> dict[str, Any]:
        release.wait(10)
        return {}

    market = FakeMarket()
    workspace = await new_workspace(store)
    [monitor_id] = await _create(store, workspace, 1, interval=3600)
    try:
        async with (
            node(store, "node-a", market, analyser=slow_analyser) as a,
            node(store, "node-b", market) as b,
        ):
            run = await a.runs.start(
                run_id=f"run_{uuid.uuid4().hex[:12]}",
                workspace_id=workspace,
                label=None,
                source="monitor",
                url=None,
                monitor_id=monitor_id,
                max_items=100,
            )
            assert run.id in a.run_tokens()
            await _until(lambda: _running(store, run.id, workspace))
            cancelled = await b.runs.cancel(run)
            assert cancelled.state == "cancelled"
            assert run.id not in a.run_tokens()
    finally:
        release.set()


async def _running(store: Store, run_id: str, workspace: str) -> bool:
    run = await store.runs.get(run_id, workspace)
    return run is not None and run.state == "running"


async def test_sqlite_is_single_node(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'one.sqlite'}")
    async with trio_asyncio.open_loop(), open_node(settings, role="serve", market=FakeMarket()):
        with pytest.raises(SecondNodeOnSqlite, match="single-node"):
            async with open_node(settings, role="worker", market=FakeMarket()):
                pass
    # Once the first node is gone, another may start.
    async with trio_asyncio.open_loop(), open_node(settings, role="serve", market=FakeMarket()):
        pass


async def test_three_nodes_share_one_origin_budget() -> None:
    client = MarketClient(ClientSettings(rate=3.0))
    client.share_rate(3)  # three live nodes: each takes a third of every origin's budget
    assert client._origin("https://www.vinted.fr").bucket.rate == pytest.approx(1.0)
    client.share_rate(1)
    assert client._origin("https://www.vinted.fr").bucket.rate == pytest.approx(3.0)

    bucket = TokenBucket(3.0, burst=3)
    bucket.reconfigure(1.0)
    assert (bucket.configured, bucket.rate) == (1.0, 1.0)
    bucket.slow_down()  # a 429: half the pace
    bucket.reconfigure(3.0)  # a node left: the budget grows, the 429's slowdown stays
    assert bucket.configured == 3.0 and bucket.rate == 0.5
