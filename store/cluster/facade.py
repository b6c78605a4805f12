"""The trio-facing facade of cluster mode: `store.cluster` (PostgreSQL only)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import partial
from typing import TYPE_CHECKING, Any

from .._db.listen import listen
from ..monitors.records import MonitorRecord
from ..runs.records import RunRecord
from . import queries as repo
from .records import Claim, CommandRecord, HeldSearch, NodeInfo, NodeRecord, TargetKind
from .searches import searches_held

if TYPE_CHECKING:
    from .._store import Store


class ClusterStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def claim_monitors(self, claim: Claim) -> list[tuple[MonitorRecord, int]]:
        return await self._store.unit(lambda db: repo.claim_monitors(db, claim))

    async def searches_held(self, node_id: str) -> list[HeldSearch]:
        """The searches `node_id` runs, and which to give up (`store/cluster/searches.py`)."""
        return await self._store.unit(lambda db: searches_held(db, node_id))

    async def claim_runs(self, claim: Claim) -> list[tuple[RunRecord, int]]:
        return await self._store.unit(lambda db: repo.claim_runs(db, claim))

    async def claim_one(
        self, kind: TargetKind, target_id: str, node_id: str, lease_seconds: float
    ) -> int | None:
        return await self._store.unit(
            lambda db: repo.claim_one(db, kind, target_id, node_id, lease_seconds)
        )

    async def live_owner(self, kind: TargetKind, target_id: str) -> str | None:
        return await self._store.unit(lambda db: repo.live_owner(db, kind, target_id))

    async def renew(
        self, node_id: str, lease_seconds: float
    ) -> tuple[dict[str, int], dict[str, int]]:
        """Renew every lease of `node_id` in one transaction: (monitors, runs) still held."""

        def work(db: Any) -> tuple[dict[str, int], dict[str, int]]:
            monitors = repo.renew(db, "monitor", node_id, lease_seconds)
            runs = repo.renew(db, "run", node_id, lease_seconds)
            return monitors, runs

        return await self._store.unit(work)

    async def release(
        self, kind: TargetKind, node_id: str, ids: Collection[str] | None = None
    ) -> int:
        return await self._store.unit(lambda db: repo.release(db, kind, node_id, ids))

    async def wanted_work(self) -> tuple[int, int]:
        return await self._store.unit(repo.wanted_work)

    async def heartbeat(
        self, node: NodeInfo, *, monitors: int, runs: int, actors_json: str, alive_within: float
    ) -> int:
        return await self._store.unit(
            partial(
                repo.heartbeat,
                node=node,
                monitors=monitors,
                runs=runs,
                actors_json=actors_json,
                alive_within=alive_within,
            )
        )

    async def forget_node(self, node_id: str) -> None:
        await self._store.unit(lambda db: repo.forget_node(db, node_id))

    async def nodes(self, alive_within: float) -> list[NodeRecord]:
        return await self._store.unit(lambda db: repo.list_nodes(db, alive_within))

    async def leases(self, kind: TargetKind, ids: Collection[str]) -> dict[str, Any]:
        return await self._store.unit(lambda db: repo.leases(db, kind, ids))

    async def send_command(self, kind: TargetKind, target_id: str, command: str) -> None:
        await self._store.unit(lambda db: repo.send_command(db, kind, target_id, command))

    async def listen_for_commands(self, on_notify: Callable[[], None]) -> None:
        """Call `on_notify` whenever another node sends a command (see `store/_db/listen.py`)."""
        await listen(self._store.url, repo.NOTIFY_CHANNEL, lambda _payload: on_notify())

    async def take_commands(self, node_id: str) -> list[CommandRecord]:
        return await self._store.unit(lambda db: repo.take_commands(db, node_id))
