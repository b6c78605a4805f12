"""`/api/ops/*`: what operators watch. Operator accounts only (`NICHESCOPE_OPERATORS`).

In cluster mode the actor list covers every live node: this node's actors as they are now,
the others' as of their last heartbeat (at most a third of a lease old), each with its node
and lease expiry. Should the database be unreachable, this node's own actors are still shown
(`partial: true`), since that is when operators look.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

import trio
from quart import Blueprint, Response
from quart_schema import validate_request, validate_response

from api.http.errors import ApiError
from api.http.openapi import operation
from api.ops.schemas import MarketSessionSet, SetMarketSession
from api.ops.system import package_version
from api.services import Services, services
from engine import SessionNotTaken
from store import DatabaseUnavailable

blueprint = Blueprint("ops", __name__, url_prefix="/api/ops")

STREAM_PERIOD_SECONDS = 2.0


async def _snapshot(svc: Services) -> dict[str, object]:
    engine, node_id = svc.engine, svc.settings.node_id
    actors: list[dict[str, Any]] = [
        {**asdict(a), "node_id": node_id, "lease_expires_at": None} for a in engine.actors()
    ]
    partial = False
    if engine.clustered:
        try:
            actors += await _other_nodes_actors(svc)
            leases = await svc.store.cluster.leases("monitor", [a["monitor_id"] for a in actors])
        except DatabaseUnavailable:
            partial, leases = True, {}
        for actor in actors:
            _, expires = leases.get(actor["monitor_id"], (None, None))
            actor["lease_expires_at"] = expires.isoformat() if expires else None
    actors.sort(key=lambda a: (a["node_id"], a["monitor_id"]))
    slots = svc.import_slots
    imports = {"running": len(slots.workspaces), "limit": int(slots.node.total_tokens)}
    dispatcher = svc.engine.dispatcher
    return {
        "node_id": node_id,
        "partial": partial,
        "actors": actors,
        "imports": imports,
        "notifications": dispatcher.status() if dispatcher is not None else None,
        "housekeeping": svc.engine.janitor.board.snapshot(),
    }


async def _other_nodes_actors(svc: Services) -> list[dict[str, Any]]:
    nodes = await svc.store.cluster.nodes(alive_within=svc.settings.lease_seconds)
    return [
        {**actor, "node_id": node.node_id}
        for node in nodes
        if node.alive and node.node_id != svc.settings.node_id
        for actor in json.loads(node.actors)
    ]


class SessionNotAccepted(ApiError):
    status, code = 422, "session_refused"


def _origins(svc: Services) -> dict[str, object]:
    reports = svc.engine.market.origin_reports()
    return {
        "node_id": svc.settings.node_id,
        "origins": [
            {key: _iso(value) for key, value in asdict(report).items()} for report in reports
        ],
        "shared_feeds": _shared_feeds(svc),
    }


def _shared_feeds(svc: Services) -> dict[str, object]:
    """This node's shared requests: which monitors (of any workspace) poll each search."""
    report = svc.engine.sharing_report()
    return {
        "feeds": [{k: _iso(v) for k, v in asdict(feed).items()} for feed in report.feeds],
        "state_hits": report.state_hits,
        "state_misses": report.state_misses,
        "states_kept": report.states_kept,
    }


def _iso(value: object) -> object:
    return value.isoformat() if isinstance(value, datetime) else value


@blueprint.get("/origins")
@operation("listMarketOrigins", access="operator")
async def list_origins() -> dict[str, object]:
    """Per marketplace site this node has talked to: the wire profile in use (and whether it
    was auto-detected), its API origin, breaker state and remaining block window, last success,
    last block and its kind, requests in the last hour, detail-API refusals (and whether that
    source is resting), polls refused as suspected blocks or for ignored filters, profile
    moves; the session (`challenge`: "browser session until ...", "operator session until
    ...", "challenged, no session", "no session"; its source and expiry; why the last attempt
    to get one failed, and since when there has been none); each state source's availability
    (`available`, `refusing`, `unavailable`); the `www` and API origins' breakers apart; the
    egress, its budget (requests per second) and its requests in the last hour. Counters are
    this node's; the profile and a browser or operator session are shared by every node.
    `shared_feeds`: the feeds this node's monitors share (one request per search and page cap,
    whatever the workspaces): per feed its URL, recent subscribers (their count and monitor
    ids), fetches, answers reused and last fetch; and the item lookups' hits and misses."""
    return _origins(services())


@blueprint.put("/origins/<site>/session")
@operation("setMarketSession", access="operator")
@validate_request(SetMarketSession)
@validate_response(MarketSessionSet, 200)
async def set_market_session(site: str, data: SetMarketSession) -> MarketSessionSet:
    """Paste a marketplace session for `site` (`www.vinted.fr`, or an allowlisted origin's
    host and port), for deployments without a browser: the site's cookies as a browser's
    developer tools copy them (`access_token_web=...; cf_clearance=...`) and, when clearance
    cookies are among them, that browser's User-Agent. Sealed at rest, used by every node,
    never shown back; its expiry is read from the token (a JWT).

    422 `session_refused` naming the reason: not a marketplace site, no `access_token_web`,
    not a JWT, already expired, a malformed cookie."""
    market = services().engine.market
    try:
        session = await market.take_operator_session(site, data.cookie, data.user_agent)
    except SessionNotTaken as err:
        raise SessionNotAccepted(err.reason) from err
    return MarketSessionSet(
        site=session.site,
        source=session.source,
        expires_at=session.expires_at,
        challenge=session.challenge,
    )


@blueprint.get("/actors")
@operation("listActors", access="operator")
async def list_actors() -> dict[str, object]:
    """Every actor of the cluster (of this node, in single-node mode): kind, state, monitor,
    workspace, node, lease expiry, last and next poll, consecutive errors, restarts, queue
    depth; this node's imports of monitor exports (running, and how many may run); and this
    node's notification dispatcher (alerts delivered and failed sends since start, channels
    being sent to now, restarts, last delivery, last error); and this node's housekeeping
    (rounds, the last one's time and what it deleted, restarts, last error)."""
    return await _snapshot(services())


@blueprint.get("/actors/stream")
@operation("streamActors", access="operator", success=(200, "Actor snapshots", "text/event-stream"))
async def stream_actors() -> Response:
    """The same as `/api/ops/actors` as a `text/event-stream`, one `actors` event every 2 s,
    each followed by an `origins` event (the same as `/api/ops/origins`)."""

    svc = services()  # the generator runs after the view returns, outside the app context

    async def events() -> AsyncIterator[bytes]:
        while True:
            yield f"event: actors\ndata: {json.dumps(await _snapshot(svc))}\n\n".encode()
            yield f"event: origins\ndata: {json.dumps(_origins(svc))}\n\n".encode()
            await trio.sleep(STREAM_PERIOD_SECONDS)

    response = Response(events(), content_type="text/event-stream")
    response.headers["Cache-Control"] = "no-store"
    response.timeout = None  # a live stream: the client decides when it ends
    return response


@blueprint.get("/nodes")
@operation("listNodes", access="operator")
async def list_nodes() -> dict[str, object]:
    """The nodes sharing this database: id, host, pid, role, version, start, last heartbeat,
    whether alive (a heartbeat within one lease), and the monitors, distinct searches (the
    monitors of one search run on one node, sharing its requests) and runs each holds. In
    single-node (SQLite) mode, just this node, with `cluster: false` (its searches: those
    polled lately)."""
    svc = services()
    engine = svc.engine
    if not engine.clustered:
        started = datetime.now(UTC) - timedelta(seconds=trio.current_time() - svc.started_at)
        now = datetime.now(UTC).isoformat()
        nodes: list[dict[str, object]] = [
            {
                "node_id": svc.settings.node_id,
                "host": os.uname().nodename,
                "pid": os.getpid(),
                "role": "serve",
                "version": package_version(),
                "started_at": started.isoformat(),
                "heartbeat_at": now,
                "alive": True,
                "monitors": len(engine.actors()),
                "searches": len(engine.sharing_report().feeds),
                "runs": len(engine.runs.running_ids()),
                "this_node": True,
            }
        ]
    else:
        records = await svc.store.cluster.nodes(alive_within=svc.settings.lease_seconds)
        nodes = [
            {
                "node_id": n.node_id,
                "host": n.host,
                "pid": n.pid,
                "role": n.role,
                "version": n.version,
                "started_at": n.started_at.isoformat(),
                "heartbeat_at": n.heartbeat_at.isoformat(),
                "alive": n.alive,
                "monitors": n.monitors,
                "searches": n.searches,
                "runs": n.runs,
                "this_node": n.node_id == svc.settings.node_id,
            }
            for n in records
        ]
    return {
        "cluster": engine.clustered,
        "lease_seconds": svc.settings.lease_seconds if engine.clustered else None,
        "nodes": nodes,
    }
