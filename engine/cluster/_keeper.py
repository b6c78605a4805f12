"""The lease keeper: this node's one task that heartbeats, renews, claims and hands back.

Every `lease_seconds / 3` it renews every lease this node holds and heartbeats its node row
(which tells it how many nodes are alive); in a second loop, as often, it claims free work
up to its fair share, hands back what exceeds that share, and takes the commands other
nodes left for its work. Monitors move a search at a time (`store/cluster/searches.py`):
the monitors of one search run on one node, where they share its marketplace requests. A
NOTIFY (`store/_db/listen.py`) wakes the second loop early, for commands only.

Safety, said out loud: a write of a poll or a run carries the fencing token of its claim and
is refused once another node has claimed the row since. And a node that cannot renew for
`lease_seconds` (database unreachable, process paused) stops all its actors before touching
the marketplace again, because by then another node may have claimed their work.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import trio

from store import (
    Claim,
    CommandRecord,
    DatabaseUnavailable,
    MonitorRecord,
    NodeInfo,
    RunRecord,
    Store,
    TargetKind,
)

log = logging.getLogger(__name__)

KINDS: tuple[TargetKind, ...] = ("monitor", "run")


@dataclass(frozen=True)
class ClusterSettings:
    node: NodeInfo
    lease_seconds: float = 15.0

    @property
    def period(self) -> float:
        """Heartbeat period: three renewals per lease, so one late renewal loses nothing."""
        return self.lease_seconds / 3


class LocalWork(Protocol):
    """What the keeper needs of the engine: the work running here, and how to change it."""

    def monitor_tokens(self) -> dict[str, int]: ...

    def run_tokens(self) -> dict[str, int]: ...

    async def adopt_monitor(self, monitor: MonitorRecord, token: int) -> None: ...

    async def adopt_run(self, run: RunRecord, token: int) -> None: ...

    def drop_monitor(self, monitor_id: str) -> None: ...

    def drop_run(self, run_id: str) -> None: ...

    async def stop_monitors(self, monitor_ids: Sequence[str]) -> None: ...

    def deliver(self, command: CommandRecord) -> None: ...

    def snapshot_json(self) -> str: ...


class LeaseKeeper:
    def __init__(
        self,
        store: Store,
        settings: ClusterSettings,
        work: LocalWork,
        *,
        on_cluster_size: Callable[[int], None] | None = None,
    ) -> None:
        self._store = store
        self.settings = settings
        self._work = work
        self._on_cluster_size = on_cluster_size
        self._woken = trio.Event()
        self._handing_back: set[str] = set()
        self._strays: set[tuple[str, str]] = set()  # (kind, id) held here with nothing running
        self.live_nodes = 1
        self.valid_until = -math.inf  # trio time until which our leases surely hold
        self._renewed = trio.Event()  # set after the first successful renewal
        self.ready = trio.Event()  # set after the first successful round (work claimed)

    @property
    def node_id(self) -> str:
        return self.settings.node.node_id

    def wake(self) -> None:
        """A NOTIFY arrived: take commands now rather than at the next heartbeat."""
        self._woken.set()

    def holds_leases(self) -> bool:
        return trio.current_time() < self.valid_until

    async def run(self, nursery: trio.Nursery) -> None:
        """Keep leases until cancelled; hand-backs run as tasks in `nursery` (the engine's).

        Renewal has a loop of its own, so that claiming and handing back, however slow on a
        busy node, never delay it. Neither loop ends on an error: each is logged and the
        round tried again, since a node that stops renewing loses all its work."""
        async with trio.open_nursery() as loops:
            loops.start_soon(self._renew_loop)
            loops.start_soon(self._balance_loop, nursery)

    async def _renew_loop(self) -> None:
        while True:
            next_round = trio.current_time() + self.settings.period
            try:
                # Bounded, so a database that hangs rather than refuses cannot hold the fence
                # check below back past the leases' end.
                with trio.fail_after(self.settings.lease_seconds):
                    await self._renew()
            except (DatabaseUnavailable, trio.TooSlowError) as err:
                log.warning("cluster heartbeat failed (%s)", err or "timed out")
            except Exception:
                log.exception("cluster heartbeat failed")
            self._fence_if_lapsed()
            await trio.sleep_until(next_round)

    async def _renew(self) -> None:
        started = trio.current_time()
        before = self._work.monitor_tokens(), self._work.run_tokens()
        monitors, runs = await self._store.cluster.renew(self.node_id, self.settings.lease_seconds)
        self.valid_until = started + self.settings.lease_seconds
        await self._forget_lost(monitors, runs, before)
        self.live_nodes = await self._store.cluster.heartbeat(
            self.settings.node,
            monitors=len(self._work.monitor_tokens()),
            runs=len(self._work.run_tokens()),
            actors_json=self._work.snapshot_json(),
            alive_within=self.settings.lease_seconds,
        )
        if self._on_cluster_size is not None:
            self._on_cluster_size(self.live_nodes)
        self._renewed.set()

    async def _balance_loop(self, nursery: trio.Nursery) -> None:
        await self._renewed.wait()  # the cluster's size is known: shares can be computed
        while True:
            next_round = trio.current_time() + self.settings.period
            try:
                with trio.fail_after(self.settings.lease_seconds):
                    await self._balance(nursery)
                    await self._take_commands()
                self.ready.set()
            except (DatabaseUnavailable, trio.TooSlowError) as err:
                log.warning("cluster balancing failed (%s)", err or "timed out")
            except Exception:
                log.exception("cluster balancing failed")
            while trio.current_time() < next_round:
                with trio.move_on_at(next_round):
                    await self._woken.wait()
                if self._woken.is_set():
                    self._woken = trio.Event()
                    try:
                        await self._take_commands()
                    except DatabaseUnavailable as err:
                        log.warning("cannot read cluster commands (%s)", err)
                    except Exception:
                        log.exception("cannot read cluster commands")

    async def _forget_lost(
        self,
        monitors: dict[str, int],
        runs: dict[str, int],
        before: tuple[dict[str, int], dict[str, int]],
    ) -> None:
        """Stop what another node claimed (or was deleted); give back rows held under this
        node id with no actor here (an earlier incarnation's), so they are claimed afresh.

        Only work that ran here before the renewal started, under the same token, is judged:
        a claim made meanwhile by the balancing loop is not in the renewal's answer yet."""
        monitors_before, runs_before = before
        now_monitors, now_runs = self._work.monitor_tokens(), self._work.run_tokens()
        for monitor_id, token in monitors_before.items():
            if monitors.get(monitor_id) != token and now_monitors.get(monitor_id) == token:
                log.warning("lease on monitor %s lost; stopping its actor", monitor_id)
                self._work.drop_monitor(monitor_id)
        for run_id, token in runs_before.items():
            if runs.get(run_id) != token and now_runs.get(run_id) == token:
                log.warning("lease on run %s lost; stopping it", run_id)
                self._work.drop_run(run_id)
        local_monitors, local_runs = self._work.monitor_tokens(), self._work.run_tokens()
        strays = {("monitor", m) for m in set(monitors) - set(local_monitors) - self._handing_back}
        strays |= {("run", r) for r in set(runs) - set(local_runs)}
        # Only rows stray two rounds running are released: a claim made by a request a
        # moment ago may not have its actor yet.
        settled, self._strays = strays & self._strays, strays
        for kind in KINDS:
            ids = [target_id for k, target_id in settled if k == kind]
            if ids:
                await self._store.cluster.release(kind, self.node_id, ids)

    async def _balance(self, nursery: trio.Nursery) -> None:
        wanted_monitors, wanted_runs = await self._store.cluster.wanted_work()
        share = math.ceil(wanted_monitors / self.live_nodes)
        held = self._work.monitor_tokens()
        # Monitors being handed back no longer count as ours, but must not be claimed again
        # (their actors may have stopped already; their release is on its way). The free
        # monitors of the searches this node runs are claimed whatever the share.
        mine = len(set(held) - self._handing_back)
        claimed = await self._store.cluster.claim_monitors(
            Claim(
                self.node_id,
                limit=max(0, share - mine),
                held=list(set(held) | self._handing_back),
                lease_seconds=self.settings.lease_seconds,
                handing_back=list(self._handing_back),
            )
        )
        for monitor, token in claimed:
            await self._work.adopt_monitor(monitor, token)
        if claimed:
            log.info("node %s claimed %d monitors", self.node_id, len(claimed))
        if not self._handing_back:
            surplus = await self._surplus(share)
            if surplus:
                self._handing_back.update(surplus)
                nursery.start_soon(self._hand_back, surplus)
        run_share = max(1, math.ceil(wanted_runs / self.live_nodes))
        runs_held = self._work.run_tokens()
        if len(runs_held) < run_share:
            for run, token in await self._store.cluster.claim_runs(
                Claim(
                    self.node_id,
                    limit=run_share - len(runs_held),
                    held=list(runs_held),
                    lease_seconds=self.settings.lease_seconds,
                )
            ):
                await self._work.adopt_run(run, token)

    async def _surplus(self, share: int) -> list[str]:
        """What to hand back, a search at a time: the monitors of a search another node runs
        more of (it takes them), then, past one over the share, whole searches, smallest
        first, as long as this node keeps its share. One over is tolerated, so that shares
        which do not divide evenly do not bounce a search between nodes every round; a
        search larger than the gap stays (moved, it would only be too large elsewhere)."""
        running = set(self._work.monitor_tokens())
        searches = [
            (search, [m for m in search.monitor_ids if m in running])
            for search in await self._store.cluster.searches_held(self.node_id)
        ]
        surplus = [m for search, ids in searches if search.give_up for m in ids]
        mine = len(running) - len(surplus)
        if mine > share + 1:
            for _, ids in sorted((len(ids), ids) for s, ids in searches if not s.give_up):
                if mine - len(ids) < share:
                    break
                surplus.extend(ids)
                mine -= len(ids)
        return sorted(surplus)

    async def _hand_back(self, monitor_ids: list[str]) -> None:
        """Stop the actors (each after its current step), then release their leases."""
        try:
            await self._work.stop_monitors(monitor_ids)
            await self._store.cluster.release("monitor", self.node_id, monitor_ids)
            log.info("node %s handed back %d monitors", self.node_id, len(monitor_ids))
        except Exception as err:
            # The leases lapse on their own; the next round gives back the strays anyway.
            log.warning("could not release handed-back monitors (%s)", err)
        finally:
            self._handing_back.difference_update(monitor_ids)

    async def _take_commands(self) -> None:
        for command in await self._store.cluster.take_commands(self.node_id):
            self._work.deliver(command)

    def _fence_if_lapsed(self) -> None:
        """Past the last renewal's lease, another node may own our work: stop it all now."""
        if self.holds_leases():
            return
        monitors, runs = self._work.monitor_tokens(), self._work.run_tokens()
        if monitors or runs:
            log.warning(
                "node %s could not renew its leases for %.0f s: stopping %d monitors, %d runs",
                self.node_id,
                self.settings.lease_seconds,
                len(monitors),
                len(runs),
            )
        for monitor_id in monitors:
            self._work.drop_monitor(monitor_id)
        for run_id in runs:
            self._work.drop_run(run_id)

    async def leave(self) -> None:
        """Graceful shutdown: give every lease back and unregister, so others claim at once."""
        for kind in KINDS:
            await self._store.cluster.release(kind, self.node_id)
        await self._store.cluster.forget_node(self.node_id)
