"""The Engine: owner of every long-lived actor (monitors, runs) and their nursery.

`async with open_engine(store, market) as engine:` opens the engine's nursery and re-spawns
every monitor that was active (or still bootstrapping) so a restart loses nothing. Leaving the
block asks each actor to stop after its current step, waits up to `grace_seconds`, then
cancels. The running monitors are the `MonitorRegistry`'s; the engine creates and deletes
monitors, routes commands to wherever they run, supervises the notification dispatcher and,
in a cluster, holds leases.

In cluster mode (`EngineSettings.cluster`, PostgreSQL) the engine runs only what it holds a
lease on: its `LeaseKeeper` claims and renews work, and commands for work another node
holds travel through the database (`store.cluster.send_command`, woken by NOTIFY), as the
same command values serialised (`engine/cluster/_codec.py`).

A monitor's actor is the only writer of its status. `pause` and `resume` are commands the
actor carries out; they return once it has (`engine/_routing.py` says where the command goes,
`engine/monitors/_handle.py` when it is `EngineBusy`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

from store import CommandRecord, DatabaseUnavailable, MonitorRecord, NewMonitor, RunRecord, Store

from ._commands import Pause, PollNow, Resume, Stop
from ._janitor import Janitor, JanitorSettings
from ._niche_watch import NicheWatch
from ._routing import CommandRouter
from ._supervisor import RestartPolicy, supervise
from .cluster import ClusterSettings, LeaseKeeper
from .market import Marketplace
from .monitors import (
    ActorKit,
    ActorStatus,
    MonitorHandle,
    MonitorPolicy,
    MonitorRegistry,
    SharedMarketplace,
    SharingReport,
)
from .notifications import NotificationDispatcher
from .runs import Analyser, RunManager, analyse_evidence

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineSettings:
    monitor_policy: MonitorPolicy = field(default_factory=MonitorPolicy)
    restart_policy: RestartPolicy = field(default_factory=RestartPolicy)
    grace_seconds: float = 10.0
    poll_concurrency: int = 16  # polls in flight at once across every monitor of this node
    # How long `pause`/`resume` wait for the actor to take the command (it takes it between
    # polls: at worst after the poll in flight); past it the command is withdrawn, `EngineBusy`.
    command_timeout_seconds: float = 30.0
    cluster: ClusterSettings | None = None  # None: a single node (SQLite, or tests)
    housekeeping: JanitorSettings = field(default_factory=JanitorSettings)


@asynccontextmanager
async def open_engine(
    store: Store,
    market: Marketplace,
    settings: EngineSettings | None = None,
    analyser: Analyser = analyse_evidence,
    *,
    on_cluster_size: Callable[[int], None] | None = None,
    dispatcher: NotificationDispatcher | None = None,
    shared: SharedMarketplace | None = None,
) -> AsyncIterator[Engine]:
    """Run an engine for the block: its nursery opened here, the shared feeds ready, previous
    work resumed in the background (`engine.resumed` says when). On the way out every actor is
    asked to stop after its current step, waited for up to `grace_seconds`, then cancelled; in
    a cluster, leases are given back.

    `on_cluster_size(n)` is told the number of live nodes after every heartbeat (cluster
    mode), so that politeness budgets can be split between them. `dispatcher` delivers the
    notifications' outbox, supervised like a monitor; every node runs one (channels are
    claimed one node at a time). `shared` replaces what monitors poll through (by default one
    `SharedMarketplace` over `market`)."""
    async with trio.open_nursery() as nursery:
        engine = Engine(
            store,
            market,
            nursery,
            settings,
            analyser,
            on_cluster_size=on_cluster_size,
            dispatcher=dispatcher,
            shared=shared,
        )
        await engine.start()
        try:
            yield engine
        finally:
            with trio.CancelScope(shield=True):
                await engine.shut_down()
            nursery.cancel_scope.cancel()


class Engine:
    """Made by `open_engine`, which owns its nursery: never built directly.

    What the rest of the service may use: the monitor commands (`start_monitor`, `pause`,
    `resume`, `poll_now`, `delete_monitor`), `runs` (start, cancel, delete analyses),
    `market` (catalogue URL checks, the operators' site reports), `dispatcher` (its status),
    `actors()`, `sharing_report()`, `clustered`, `resumed` and `node_id`. The rest serves the
    lease keeper (`monitor_tokens`, `adopt_monitor`, ...) and tests."""

    def __init__(
        self,
        store: Store,
        market: Marketplace,
        nursery: trio.Nursery,
        settings: EngineSettings | None = None,
        analyser: Analyser = analyse_evidence,
        *,
        on_cluster_size: Callable[[int], None] | None = None,
        dispatcher: NotificationDispatcher | None = None,
        shared: SharedMarketplace | None = None,
    ) -> None:
        self.store = store
        self.market = market  # as given: for runs, URL checks, the operators' site reports
        # What monitors poll through (`shared`, or one sharing feeds over `market`).
        self.shared = shared if shared is not None else SharedMarketplace(market)
        self.settings = settings or EngineSettings()
        self.nursery = nursery
        self.dispatcher = dispatcher
        self.niche_watch = NicheWatch(store)
        self.janitor = Janitor(store, self.settings.housekeeping)
        cluster = self.settings.cluster
        self.runs = RunManager(store, market, analyser, lambda: self.nursery, cluster=cluster)
        kit = ActorKit(
            store=store,
            market=self.shared,
            policy=self.settings.monitor_policy,
            restart_policy=self.settings.restart_policy,
            poll_slots=trio.CapacityLimiter(self.settings.poll_concurrency),
            after_poll=self.niche_watch.after_poll,
        )
        self.monitors = MonitorRegistry(kit, nursery)
        self.keeper = (
            None
            if cluster is None
            else LeaseKeeper(store, cluster, self, on_cluster_size=on_cluster_size)
        )
        # Set once previous work has been re-spawned (cluster mode: once work was claimed).
        self.resumed = trio.Event() if self.keeper is None else self.keeper.ready
        self._keeper_scope = trio.CancelScope()
        self._router = CommandRouter(
            store,
            node_id=self.node_id,
            timeout=self.settings.command_timeout_seconds,
            live=self.monitors.live,
            start_actor=self._claim_and_spawn,
            cancel_run_here=self.runs.cancel_here,
        )

    async def start(self) -> None:
        """Called once by `open_engine`: returns once the shared feeds are ready; monitors
        and runs resume in the background."""
        await self.nursery.start(self.shared.run)
        policy = self.settings.restart_policy
        self.nursery.start_soon(
            supervise, "housekeeping", self.janitor.run, self.janitor.board, policy
        )
        if self.dispatcher is not None:
            self.nursery.start_soon(self._run_dispatcher, self.dispatcher)
        if self.keeper is None:
            self.nursery.start_soon(self._resume_previous_work)
        else:
            self.nursery.start_soon(self._keep_leases, self.keeper)

    async def shut_down(self) -> None:
        """Called once by `open_engine`, shielded: no new claim, every actor stopped (after
        its step, within the grace period), leases given back."""
        self._keeper_scope.cancel()
        with trio.move_on_after(self.settings.grace_seconds):
            await self.monitors.stop_all_politely()
        await self._leave_cluster()

    async def _run_dispatcher(self, dispatcher: NotificationDispatcher) -> None:
        """The dispatcher under one-for-one supervision, like a monitor. Started with
        `start_soon`, unlike monitors: nothing here waits for it, and it is ready only after
        a database round trip (it gives back a previous life's claims first), which a
        database down at start-up must not hold the engine's start back for."""
        policy = self.settings.restart_policy
        await supervise("notification dispatcher", dispatcher.run, dispatcher.board, policy)

    async def _keep_leases(self, keeper: LeaseKeeper) -> None:
        """The keeper and its NOTIFY listener, in a scope that shutdown cancels first, so that
        no claim can slip in while the node is giving its work back."""
        with self._keeper_scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(keeper.run, self.nursery)
                nursery.start_soon(self.store.cluster.listen_for_commands, keeper.wake)

    @property
    def clustered(self) -> bool:
        """Whether this node shares its work with others through leases (PostgreSQL)."""
        return self.keeper is not None

    def sharing_report(self) -> SharingReport:
        """What this node's shared feeds hold, for operators (any workspace's monitors)."""
        return self.shared.report()

    @property
    def node_id(self) -> str | None:
        return None if self.settings.cluster is None else self.settings.cluster.node.node_id

    async def _resume_previous_work(self) -> None:
        """Re-spawn the monitors and runs a previous process left going.

        In the background and retried: a database that is down at start-up must not keep the
        service (and its /health, which says 503 meanwhile) from starting.
        """
        delay = 0.5
        while True:
            try:
                for monitor in await self.store.monitors.to_resume():
                    await self.spawn_monitor(monitor)
                resumed_runs = await self.runs.resume_unfinished()
            except DatabaseUnavailable as err:
                log.warning("cannot resume previous work yet (%s); retry in %.0f s", err, delay)
                await trio.sleep(delay)
                delay = min(delay * 2, 30.0)
                continue
            log.info("engine resumed %d monitors, %d runs", len(self.monitors), resumed_runs)
            self.resumed.set()
            return

    async def _leave_cluster(self) -> None:
        """Stop the runs, then give every lease back so other nodes take over at once."""
        if self.keeper is None:
            return
        self.monitors.cancel_all()  # past the grace period: no write may follow the release
        await self.runs.stop_all()
        with trio.move_on_after(5):
            try:
                await self.keeper.leave()
            except DatabaseUnavailable as err:
                log.warning("could not give leases back (%s); they lapse on their own", err)

    # -- monitors ------------------------------------------------------------------------------

    async def spawn_monitor(
        self, monitor: MonitorRecord, lease_token: int | None = None
    ) -> MonitorHandle:
        """Start supervising the actor of a stored monitor (no-op if it runs already; a new
        `lease_token` then replaces the old one). Returns once the actor is ready."""
        return await self.monitors.spawn(monitor, lease_token)

    async def start_monitor(self, new: NewMonitor, at_most: int | None = None) -> MonitorRecord:
        """Create the monitor (`paused`) and start its actor, whose bootstrap poll makes it
        `active`; `QuotaFull`, nothing done, when `at_most` (the plan's monitors) are in use."""
        monitor = await self.store.monitors.create(new, at_most=at_most)
        await self._claim_and_spawn(monitor)
        return monitor

    async def _claim_and_spawn(self, monitor: MonitorRecord) -> MonitorHandle | None:
        """Run the monitor here; in cluster mode only once this node holds its lease (None
        if another node claimed it first: it runs there)."""
        if self.settings.cluster is None:
            return await self.spawn_monitor(monitor)
        token = await self.store.cluster.claim_one(
            "monitor", monitor.id, self.settings.cluster.node.node_id, self.lease_seconds
        )
        if token is None:
            return None
        return await self.spawn_monitor(monitor, lease_token=token)

    @property
    def lease_seconds(self) -> float:
        return 0.0 if self.settings.cluster is None else self.settings.cluster.lease_seconds

    async def pause(self, monitor: MonitorRecord) -> None:
        """Stop polling until resumed. Returns once the monitor's actor has written `paused`
        (after the poll it has in flight, if any); `EngineBusy` if it cannot take it now."""
        await self._router.order(monitor.id, Pause())

    async def resume(self, monitor: MonitorRecord) -> None:
        """Resume polling, at once (also out of `error`, the error count cleared); starts the
        actor if none runs. Returns once the actor has written `active`; `EngineBusy` if it
        cannot take it now."""
        await self._router.order(monitor.id, Resume())

    async def poll_now(self, monitor_id: str) -> bool:
        """Poll at once, on whichever node runs the monitor; False if none runs it."""
        if self.monitors.tell(monitor_id, PollNow()):
            return True
        return await self._router.tell_owner("monitor", monitor_id, PollNow())

    async def delete_monitor(self, monitor: MonitorRecord) -> bool:
        """Stop the actor (after its current step, at most the grace period), delete the data."""
        if self.monitors.is_running(monitor.id):
            await self.monitors.stop([monitor.id], self.settings.grace_seconds)
        else:
            # Another node's actor stops at the command; a poll it is writing meanwhile is
            # refused by its fence once the row is gone.
            await self._router.tell_owner("monitor", monitor.id, Stop())
        return await self.store.monitors.delete(monitor.id, monitor.workspace_id)

    def actors(self) -> list[ActorStatus]:
        return self.monitors.statuses()

    # -- what the lease keeper sees of this node (cluster mode) --------------------------------

    def monitor_tokens(self) -> dict[str, int]:
        return self.monitors.lease_tokens()

    def run_tokens(self) -> dict[str, int]:
        return self.runs.lease_tokens()

    async def adopt_monitor(self, monitor: MonitorRecord, token: int) -> None:
        await self.spawn_monitor(monitor, lease_token=token)

    async def adopt_run(self, run: RunRecord, token: int) -> None:
        await self.runs.adopt(run, token)

    def drop_monitor(self, monitor_id: str) -> None:
        """Stop at once, mid-poll if need be: the lease is gone, so is the right to write."""
        self.monitors.drop(monitor_id)

    def drop_run(self, run_id: str) -> None:
        self.runs.drop(run_id)

    async def stop_monitors(self, monitor_ids: Sequence[str]) -> None:
        """Stop these actors after their current step (at most the grace period each)."""
        await self.monitors.stop(monitor_ids, self.settings.grace_seconds)

    def deliver(self, record: CommandRecord) -> None:
        """A command another node sent for work held here (see `CommandRouter.deliver`)."""
        self._router.deliver(record)

    def snapshot_json(self) -> str:
        return self.monitors.statuses_json()

    def is_running(self, monitor_id: str) -> bool:
        return self.monitors.is_running(monitor_id)
