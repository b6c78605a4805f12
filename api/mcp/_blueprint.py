"""The `mcp` blueprint, its per-app state and the rate limit that guards every MCP route.

`/mcp` is not under `/api`, so `enforce_access` never runs here: the transport authenticates
`tools/call` itself (bearer PAT only) and everything else is public.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask.sansio.blueprints import BlueprintSetupState
from quart import Blueprint, current_app

from api.http.auth import client_ip
from api.http.errors import TooManyRequests
from api.http.ratelimit import SlidingWindowLimiter
from api.mcp._registry import ToolRegistry
from api.mcp._sessions import McpSessions
from api.mcp.tools import REGISTRY
from api.services import Services

REQUESTS_PER_MINUTE = 300
STATE_KEY = "nichescope.mcp"

blueprint = Blueprint("mcp", __name__)


@dataclass
class McpState:
    sessions: McpSessions
    limiter: SlidingWindowLimiter
    registry: ToolRegistry


def mcp_state() -> McpState:
    return current_app.extensions[STATE_KEY]  # type: ignore[no-any-return]


def _setup(state: BlueprintSetupState) -> None:
    svc: Services = state.app.extensions["nichescope"]
    state.app.extensions[STATE_KEY] = McpState(
        sessions=McpSessions(svc.hasher),
        limiter=SlidingWindowLimiter(REQUESTS_PER_MINUTE, 60.0),
        registry=REGISTRY,
    )


blueprint.record_once(_setup)


@blueprint.before_request
async def _rate_limit() -> None:
    """300 requests per minute per client IP across every MCP route (429 with Retry-After).
    The client IP is the socket peer unless that peer is a trusted proxy."""
    wait = mcp_state().limiter.hit(client_ip())
    if wait > 0:
        raise TooManyRequests(
            wait, f"Too many MCP requests: at most {REQUESTS_PER_MINUTE} per minute per client"
        )
