"""`/api/ops/*`: what operators watch. Operator accounts only (`NICHESCOPE_OPERATORS`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import asdict

import trio
from quart import Blueprint, Response

from .openapi import operation
from .services import Services, services

blueprint = Blueprint("ops", __name__, url_prefix="/api/ops")

STREAM_PERIOD_SECONDS = 2.0


def _snapshot(svc: Services) -> dict[str, object]:
    actors = sorted(svc.engine.actors(), key=lambda a: a.monitor_id)
    return {"node_id": svc.settings.node_id, "actors": [asdict(a) for a in actors]}


@blueprint.get("/actors")
@operation("listActors", access="operator")
async def list_actors() -> dict[str, object]:
    """Every actor on this node: kind, state, monitor, workspace, last and next poll,
    consecutive errors, restarts, queue depth."""
    return _snapshot(services())


@blueprint.get("/actors/stream")
@operation("streamActors", access="operator", success=(200, "Actor snapshots", "text/event-stream"))
async def stream_actors() -> Response:
    """The same as `/api/ops/actors` as a `text/event-stream`, one `actors` event every 2 s."""

    svc = services()  # the generator runs after the view returns, outside the app context

    async def events() -> AsyncIterator[bytes]:
        while True:
            yield f"event: actors\ndata: {json.dumps(_snapshot(svc))}\n\n".encode()
            await trio.sleep(STREAM_PERIOD_SECONDS)

    response = Response(events(), content_type="text/event-stream")
    response.headers["Cache-Control"] = "no-store"
    response.timeout = None  # a live stream: the client decides when it ends
    return response
