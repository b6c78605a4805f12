"""Records of cluster mode (frozen; never ORM rows)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

TargetKind = Literal["monitor", "run"]


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """Who this node is, as it registers itself."""

    node_id: str
    host: str
    pid: int
    version: str
    role: str  # "serve" or "worker"


@dataclass(frozen=True, slots=True)
class Claim:
    """What claiming work takes (`store.cluster.claim_monitors`, `claim_runs`): up to `limit`
    targets with no live owner, leased to `node_id` for `lease_seconds`; `held`, the ids the
    node holds already (or is handing back), are never claimed again. Monitors are claimed a
    search at a time (`store/cluster/searches.py`): the free ones of a search the node runs
    whatever the limit; a search whose monitors are all in `handing_back` is no longer its."""

    node_id: str
    limit: int
    held: Collection[str]
    lease_seconds: float
    handing_back: Collection[str] = ()


@dataclass(frozen=True, slots=True)
class HeldSearch:
    """A search (canonical catalogue URL) a node holds live leases on: its monitors there, and
    whether the node should give them up (another live node runs more of the search)."""

    url: str
    monitor_ids: tuple[str, ...]
    give_up: bool


@dataclass(frozen=True, slots=True)
class NodeRecord:
    node_id: str
    host: str
    pid: int
    version: str
    role: str
    started_at: datetime
    heartbeat_at: datetime
    alive: bool
    monitors: int
    runs: int
    actors: str  # the node's last actor snapshot, JSON
    searches: int = 0  # distinct searches among the monitors it holds


@dataclass(frozen=True, slots=True)
class CommandRecord:
    id: int
    target_kind: TargetKind
    target_id: str
    command: str  # serialised by the engine (`engine/cluster/_codec.py`), opaque to the store
    age_seconds: float = 0.0  # how long it waited in the table (the database's clock)
