"""The MCP tool server at `/mcp` (Streamable HTTP, protocol revision 2025-06-18).

Layout: `_protocol` (JSON-RPC messages, versions), `_sessions` (signed session ids),
`_registry` (what a tool is; list and call), `tools/` (one module per tool + `REGISTRY`),
`_dispatch` (methods), `_transport` (`/mcp` HTTP rules), `_discovery` (manifest, server card),
`_blueprint` (blueprint, per-app state, rate limit).
"""

from __future__ import annotations

from api.mcp import _discovery, _transport  # noqa: F401  (they attach their routes to the blueprint)
from api.mcp._blueprint import REQUESTS_PER_MINUTE, blueprint
from api.mcp._registry import READ_ONLY, Annotations, Tool, ToolError
from api.mcp.wire import SUPPORTED_VERSIONS

__all__ = [
    "READ_ONLY",
    "REQUESTS_PER_MINUTE",
    "SUPPORTED_VERSIONS",
    "Annotations",
    "Tool",
    "ToolError",
    "blueprint",
]
