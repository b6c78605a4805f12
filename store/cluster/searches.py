"""One node per search: the lease queries that keep the monitors of one search on one node.

The monitors of one search (one canonical catalogue URL, `monitors.url`) share the marketplace
requests of the node that runs them (engine/monitors/_shared_feeds.py): polled from two nodes,
a search would cost two requests a tick where one does. Leases stay per monitor (the fencing
token is a monitor's), but a node claims a search at a time:

- every free monitor of a search it runs already, whatever its share (a monitor that joins a
  search goes where the search is polled);
- then new searches, whole, oldest first, until its share is reached (the last one whole);
- never a free monitor of a search another live node runs: that node takes it.

A search found on two nodes (a monitor started or resumed through a node other than its
search's, which claims it at once so that it starts without waiting; claims that raced) is
given back by the node that runs fewer of its monitors (`searches_held`), and taken by the
other as above.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import and_, func, select, update
from sqlalchemy.orm import Session, aliased

from ..monitors.models import Monitor
from .records import Claim, HeldSearch


def _live_by(owner: Any, node_id: str) -> Any:
    """`owner` (a Monitor alias) leased, live, to `node_id`."""
    return and_(owner.lease_owner == node_id, owner.lease_expires_at >= func.now())


def searches_of(node_id: str, leaving: list[str]) -> Any:
    """The searches `node_id` runs: a monitor leased to it, live, not being handed back."""
    other = aliased(Monitor)
    where = _live_by(other, node_id)
    if leaving:
        where = and_(where, other.id.not_in(leaving))
    return select(other.url).where(where)


def searches_elsewhere(node_id: str) -> Any:
    """The searches another live node runs."""
    other = aliased(Monitor)
    return select(other.url).where(
        other.lease_owner != node_id, other.lease_expires_at >= func.now()
    )


def claim_searches(db: Session, claim: Claim, free: Any, lease: dict[str, Any]) -> list[Monitor]:
    """Lease to `claim.node_id` the `free` monitors of the searches it runs, then whole new
    searches up to `claim.limit` monitors (the last search whole); the updated rows."""
    leaving = list(claim.handing_back)
    followers = list(
        db.scalars(
            select(Monitor.id)
            .where(free, Monitor.url.in_(searches_of(claim.node_id, leaving)))
            .with_for_update(skip_locked=True)
        )
    )
    ids = followers + _new_searches(db, claim, free, leaving)
    if not ids:
        return []
    rows = db.scalars(update(Monitor).where(Monitor.id.in_(ids)).values(lease).returning(Monitor))
    return list(rows)


def _new_searches(db: Session, claim: Claim, free: Any, leaving: list[str]) -> list[str]:
    """Free monitors of searches no live node runs, whole searches in order of their oldest
    monitor, until `claim.limit` monitors (a search never split)."""
    if claim.limit <= 0:
        return []
    unclaimed = and_(
        free,
        Monitor.url.not_in(searches_elsewhere(claim.node_id)),
        Monitor.url.not_in(searches_of(claim.node_id, leaving)),
    )
    urls = list(
        db.scalars(
            select(Monitor.url)
            .where(unclaimed)
            .group_by(Monitor.url)
            .order_by(func.min(Monitor.created_at), Monitor.url)
            .limit(claim.limit)
        )
    )
    if not urls:
        return []
    rows = db.execute(
        select(Monitor.id, Monitor.url)
        .where(unclaimed, Monitor.url.in_(urls))
        .with_for_update(skip_locked=True)
    )
    by_search: dict[str, list[str]] = defaultdict(list)
    for monitor_id, url in rows:
        by_search[url].append(monitor_id)
    taken: list[str] = []
    for url in urls:  # oldest search first, each whole
        if len(taken) >= claim.limit:
            break
        taken.extend(by_search.get(url, ()))
    return taken


def searches_held(db: Session, node_id: str) -> list[HeldSearch]:
    """The searches `node_id` holds live leases on, each with its monitors there, and whether
    another live node runs more of it (or as many, with a node id sorting first): then this
    node's part is to be given back, for that node to take."""
    mine: dict[str, list[str]] = defaultdict(list)
    for monitor_id, url in db.execute(
        select(Monitor.id, Monitor.url).where(_live_by(Monitor, node_id))
    ):
        mine[url].append(monitor_id)
    if not mine:
        return []
    other = aliased(Monitor)
    rivals = db.execute(
        select(other.url, other.lease_owner, func.count())
        .where(
            other.url.in_(select(Monitor.url).where(_live_by(Monitor, node_id))),
            other.lease_owner != node_id,
            other.lease_expires_at >= func.now(),
        )
        .group_by(other.url, other.lease_owner)
    )
    yields: set[str] = set()
    for url, owner, count in rivals:
        ours = len(mine[url])
        if int(count) > ours or (int(count) == ours and str(owner) < node_id):
            yields.add(url)
    return [HeldSearch(url, tuple(sorted(ids)), url in yields) for url, ids in sorted(mine.items())]
