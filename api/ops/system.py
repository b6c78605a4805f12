"""`/health` (readiness: the database answers) and `/api/status` (liveness and build data)."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import trio
from quart import Blueprint, Response
from quart_schema import document_response, validate_response

from api.http.errors import problem
from api.http.openapi import INTERFACE_VERSION, operation
from api.ops.schemas import HealthResponse, StatusResponse
from api.services import services

blueprint = Blueprint("system", __name__)


@cache
def package_version() -> str:
    try:
        return version("nichescope")
    except PackageNotFoundError:
        return "0+unknown"


def git_revision(configured: str) -> str | None:
    """`configured` (`NICHESCOPE_GIT_REVISION`, set in images) if set, else the checkout's
    HEAD, else None."""
    return configured or checkout_revision()


@cache
def checkout_revision() -> str | None:
    root = Path(__file__).resolve().parent.parent
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=2,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None


@blueprint.get("/health")
@operation("getHealth", access="public")
@document_response(HealthResponse, 200)
async def health() -> Response:
    """Readiness: 200 when the database answers, 503 with the error envelope when not (or
    not within `HEALTH_TIMEOUT_SECONDS`). Requests at the same moment share one probe."""
    svc = services()
    if not await svc.readiness.ready(svc.store.ping):
        return problem(
            503,
            "unavailable",
            "The database is not answering",
            suggest=["Check NICHESCOPE_DATABASE_URL and that the database is up"],
            headers={"Retry-After": "5"},
        )
    return Response(
        HealthResponse(status="ok", database="ok").model_dump_json(),
        content_type="application/json",
    )


@blueprint.get("/api/status")
@operation("getStatus", access="public")
@validate_response(StatusResponse, 200)
async def status() -> StatusResponse:
    """Liveness and build metadata; needs no credentials."""
    svc = services()
    uptime = trio.current_time() - svc.started_at
    return StatusResponse(
        service="nichescope",
        version=package_version(),
        interface_version=INTERFACE_VERSION,
        git_revision=git_revision(svc.settings.git_revision),
        node_id=svc.settings.node_id,
        started_at=datetime.now(UTC) - timedelta(seconds=uptime),
        uptime_seconds=round(uptime, 3),
        database=svc.store.dialect,
    )
