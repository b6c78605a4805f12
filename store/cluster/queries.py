"""Cluster repository: leases on monitors and runs, node heartbeats, commands between nodes.

PostgreSQL only (SQLite mode is single-node). Every time is the database's `now()`, so the
nodes' own clocks never have to agree. Work is claimed with `FOR UPDATE SKIP LOCKED`: two
nodes claiming at once never wait on, nor take, the same row. Each claim bumps the row's
fencing token; a write carrying an older token is refused (`LeaseLost`).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from typing import Any, cast

from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.orm import Session

from .._db.rows import to_record
from ..monitors.models import Monitor
from ..monitors.queries import monitor_record
from ..monitors.records import MonitorRecord
from ..runs.models import Run
from ..runs.queries import run_record
from ..runs.records import RunRecord
from .fence import Leased, leased_model
from .models import ClusterCommand, Node
from .records import Claim, CommandRecord, NodeInfo, NodeRecord, TargetKind
from .searches import claim_searches

NOTIFY_CHANNEL = "nichescope_commands"
FORGET_NODES_AFTER = timedelta(days=1)
FORGET_COMMANDS_AFTER = timedelta(minutes=10)

MONITOR_WANTS_ACTOR = or_(
    Monitor.status.in_(("active", "error")),
    and_(Monitor.status == "paused", Monitor.bootstrapped_at.is_(None)),
)
RUN_UNFINISHED = Run.state.in_(("queued", "running"))
MONITOR_LEASED = and_(Monitor.lease_owner.is_not(None), Monitor.lease_expires_at >= func.now())


def _model(kind: TargetKind) -> Leased:
    return leased_model(kind)


def _free(model: Leased, node_id: str, held: Collection[str]) -> Any:
    """Unowned, lapsed, or left to this node id by an earlier incarnation (not held now)."""
    lapsed = or_(model.lease_owner.is_(None), model.lease_expires_at < func.now())
    if not held:
        return or_(lapsed, model.lease_owner == node_id)
    return and_(or_(lapsed, model.lease_owner == node_id), model.id.not_in(list(held)))


def _lease_values(model: Leased, node_id: str, lease_seconds: float) -> dict[str, Any]:
    return {
        "lease_owner": node_id,
        "lease_token": model.lease_token + 1,
        "lease_expires_at": func.now() + timedelta(seconds=lease_seconds),
    }


def _claim(
    db: Session, model: Leased, wanted: Any, order: tuple[Any, ...], claim: Claim
) -> list[Any]:
    """Up to `claim.limit` rows of `model` matching `wanted` with no live owner (first in
    `order`), leased to `claim.node_id`; the updated rows."""
    if claim.limit <= 0:
        return []
    ids = list(
        db.scalars(
            select(model.id)
            .where(wanted, _free(model, claim.node_id, claim.held))
            .order_by(*order)
            .limit(claim.limit)
            .with_for_update(skip_locked=True)
        )
    )
    if not ids:
        return []
    rows = db.scalars(
        update(model)
        .where(model.id.in_(ids))
        .values(_lease_values(model, claim.node_id, claim.lease_seconds))
        .returning(model)
    )
    return list(rows)


def claim_monitors(db: Session, claim: Claim) -> list[tuple[MonitorRecord, int]]:
    """Monitors that want an actor and have no live owner, leased as `claim` says, a search
    at a time (`searches.claim_searches`)."""
    free = and_(MONITOR_WANTS_ACTOR, _free(Monitor, claim.node_id, claim.held))
    lease = _lease_values(Monitor, claim.node_id, claim.lease_seconds)
    rows = claim_searches(db, claim, free, lease)
    return [(monitor_record(row), row.lease_token) for row in rows]


def claim_runs(db: Session, claim: Claim) -> list[tuple[RunRecord, int]]:
    """Unfinished runs with no live owner, leased as `claim` says."""
    rows = _claim(db, Run, RUN_UNFINISHED, (Run.created_at,), claim)
    return [(run_record(row), row.lease_token) for row in rows]


def claim_one(
    db: Session, kind: TargetKind, target_id: str, node_id: str, lease_seconds: float
) -> int | None:
    """Lease one monitor or run to `node_id` unless another node holds a live lease on it;
    the new fencing token, or None (held elsewhere, or gone).

    A monitor is claimed even when another node runs its search: a monitor started or
    resumed through this node starts at once, and the keepers then move it to its search's
    node (the node running fewer of a search's monitors gives them up, `searches_held`)."""
    model = _model(kind)
    free = or_(
        model.lease_owner.is_(None),
        model.lease_owner == node_id,
        model.lease_expires_at < func.now(),
    )
    locked = db.scalar(select(model.id).where(model.id == target_id, free).with_for_update())
    if locked is None:
        return None
    token = db.scalar(
        update(model)
        .where(model.id == target_id)
        .values(_lease_values(model, node_id, lease_seconds))
        .returning(model.lease_token)
    )
    return None if token is None else int(token)


def live_owner(db: Session, kind: TargetKind, target_id: str) -> str | None:
    """The node holding a live lease on the monitor or run, if any."""
    model = _model(kind)
    return db.scalar(
        select(model.lease_owner).where(model.id == target_id, model.lease_expires_at >= func.now())
    )


def renew(db: Session, kind: TargetKind, node_id: str, lease_seconds: float) -> dict[str, int]:
    """Extend every lease `node_id` holds; returns id -> fencing token of what it still holds
    (a row another node claimed meanwhile, or a deleted one, is simply absent)."""
    model = _model(kind)
    rows = db.execute(
        update(model)
        .where(model.lease_owner == node_id)
        .values(lease_expires_at=func.now() + timedelta(seconds=lease_seconds))
        .returning(model.id, model.lease_token)
    )
    return {row[0]: int(row[1]) for row in rows}


def release(db: Session, kind: TargetKind, node_id: str, ids: Collection[str] | None) -> int:
    """Give leases back (all of them when `ids` is None) so other nodes may claim at once."""
    model = _model(kind)
    query = update(model).where(model.lease_owner == node_id)
    if ids is not None:
        query = query.where(model.id.in_(list(ids)))
    result = db.execute(query.values(lease_owner=None, lease_expires_at=None))
    return int(result.rowcount)  # type: ignore[attr-defined]


def wanted_work(db: Session) -> tuple[int, int]:
    """The work to share out, cluster-wide: monitors that want an actor or hold a live lease
    (a paused monitor keeps its actor, and its node's share must count it), and unfinished
    runs."""
    monitors = db.scalar(
        select(func.count()).select_from(Monitor).where(or_(MONITOR_WANTS_ACTOR, MONITOR_LEASED))
    )
    runs = db.scalar(select(func.count()).select_from(Run).where(RUN_UNFINISHED))
    return int(monitors or 0), int(runs or 0)


# -- nodes ----------------------------------------------------------------------------------


def heartbeat(
    db: Session,
    node: NodeInfo,
    *,
    monitors: int,
    runs: int,
    actors_json: str,
    alive_within: float,
) -> int:
    """Record that `node` is alive (registering it the first time); the live node count."""
    values = {
        "heartbeat_at": func.now(),
        "monitors": monitors,
        "runs": runs,
        "actors": actors_json,
    }
    result = db.execute(update(Node).where(Node.id == node.node_id).values(**values))
    if result.rowcount == 0:  # type: ignore[attr-defined]
        db.execute(
            insert(Node).values(
                id=node.node_id,
                host=node.host,
                pid=node.pid,
                version=node.version,
                role=node.role,
                started_at=func.now(),
                **values,
            )
        )
    db.execute(delete(Node).where(Node.heartbeat_at < func.now() - FORGET_NODES_AFTER))
    live = db.scalar(
        select(func.count())
        .select_from(Node)
        .where(Node.heartbeat_at >= func.now() - timedelta(seconds=alive_within))
    )
    return max(1, int(live or 0))


def forget_node(db: Session, node_id: str) -> None:
    db.execute(delete(Node).where(Node.id == node_id))


def list_nodes(db: Session, alive_within: float) -> list[NodeRecord]:
    now = (db.execute(select(func.now()))).scalar_one()
    # Distinct searches each node polls (the monitors of a search run there together).
    counted = db.execute(
        select(Monitor.lease_owner, func.count(func.distinct(Monitor.url)))
        .where(MONITOR_LEASED)
        .group_by(Monitor.lease_owner)
    )
    searches = {owner: count for owner, count in counted}
    rows = db.scalars(select(Node).order_by(Node.started_at, Node.id))
    return [
        to_record(
            NodeRecord,
            row,
            node_id=row.id,
            alive=(now - row.heartbeat_at).total_seconds() <= alive_within,
            searches=int(searches.get(row.id, 0)),
        )
        for row in rows
    ]


def leases(db: Session, kind: TargetKind, ids: Collection[str]) -> dict[str, Any]:
    """id -> (owner, expiry) of the given monitors or runs, for the ops view."""
    model = _model(kind)
    rows = db.execute(
        select(model.id, model.lease_owner, model.lease_expires_at).where(model.id.in_(list(ids)))
    )
    return {row[0]: (row[1], row[2]) for row in rows}


# -- commands -------------------------------------------------------------------------------


def send_command(db: Session, kind: TargetKind, target_id: str, command: str) -> None:
    """Queue a command for whichever node owns the target, and wake the nodes (the NOTIFY is
    delivered when this transaction commits, and not at all if it rolls back). `command` is
    opaque here: the engine's serialised command (`engine/cluster/_codec.py`)."""
    db.execute(
        insert(ClusterCommand).values(
            target_kind=kind, target_id=target_id, command=command, created_at=func.now()
        )
    )
    db.execute(select(func.pg_notify(NOTIFY_CHANNEL, f"{kind}:{target_id}")))


def take_commands(db: Session, node_id: str) -> list[CommandRecord]:
    """Remove and return the commands for work `node_id` owns, oldest first, each with its
    age on the database's clock (so that the owner can drop one its sender no longer waits
    for); commands nobody picked up for ten minutes (their target has no owner) are dropped."""
    owned_monitors = select(Monitor.id).where(Monitor.lease_owner == node_id)
    owned_runs = select(Run.id).where(Run.lease_owner == node_id)
    rows = db.execute(
        delete(ClusterCommand)
        .where(
            or_(
                and_(
                    ClusterCommand.target_kind == "monitor",
                    ClusterCommand.target_id.in_(owned_monitors),
                ),
                and_(
                    ClusterCommand.target_kind == "run",
                    ClusterCommand.target_id.in_(owned_runs),
                ),
            )
        )
        .returning(
            ClusterCommand.id,
            ClusterCommand.target_kind,
            ClusterCommand.target_id,
            ClusterCommand.command,
            func.extract("epoch", func.now() - ClusterCommand.created_at),
        )
    )
    taken = sorted(
        (
            CommandRecord(
                id=r[0],
                target_kind=cast(TargetKind, r[1]),
                target_id=r[2],
                command=r[3],
                age_seconds=max(0.0, float(r[4] or 0)),
            )
            for r in rows
        ),
        key=lambda c: c.id,
    )
    db.execute(
        delete(ClusterCommand).where(ClusterCommand.created_at < func.now() - FORGET_COMMANDS_AFTER)
    )
    return taken
