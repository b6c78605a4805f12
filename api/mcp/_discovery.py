"""Discovery documents, no authentication: the tool manifest and the static server card.

`GET /mcp/manifest` and `GET /.well-known/mcp/manifest.json`: the tools with their scopes
and schemas, and how to authenticate. `GET /.well-known/mcp.json`: the server card (name,
version, the streamable-http URL, protocol versions, auth).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from quart import Response
from quart_schema import document_response

from api.http.openapi import operation
from api.mcp._blueprint import blueprint, mcp_state
from api.mcp._protocol import LATEST_VERSION, json_response
from api.mcp.wire import SUPPORTED_VERSIONS
from api.ops.system import package_version
from api.services import services

DESCRIPTION = (
    "Find sales niches on a second-hand fashion marketplace: analyses, monitors and runs "
    "of your workspace, for AI agents."
)


class McpDocument(BaseModel):
    """A discovery document (manifest or server card)."""

    model_config = ConfigDict(extra="allow")
    name: str
    version: str


def _auth(public_url: str) -> dict[str, Any]:
    return {
        "type": "bearer",
        "scheme": "Bearer",
        "header": "Authorization: Bearer <token>",
        "token_format": "nsc_<secret>",
        "obtain_at": f"{public_url}/account/keys",
        "description": (
            "A personal access token created by a signed-in user at /account/keys. "
            "initialize, ping, tools/list and these documents need no credentials; "
            "tools/call needs the token, with the scope the tool names."
        ),
        "scopes": {
            "read": "List and read: analyses, monitors, runs, the caller's identity",
            "write": "Create: monitors and analyses",
        },
        "required_for": ["tools/call"],
    }


def _server() -> dict[str, Any]:
    """Who the server is and which protocol versions it speaks: both documents start so."""
    return {
        "name": "nichescope",
        "title": "Nichescope",
        "version": package_version(),
        "description": DESCRIPTION,
        "protocolVersion": LATEST_VERSION,
        "supportedProtocolVersions": list(SUPPORTED_VERSIONS),
    }


def manifest(public_url: str) -> dict[str, Any]:
    return {
        **_server(),
        "endpoint": f"{public_url}/mcp",
        "transport": "streamable-http",
        "auth": _auth(public_url),
        "tools": [{**tool.descriptor(), "scope": tool.scope} for tool in mcp_state().registry],
    }


def server_card(public_url: str) -> dict[str, Any]:
    server = _server()
    return {
        **server,
        "serverInfo": {key: server[key] for key in ("name", "title", "version")},
        "remotes": [{"type": "streamable-http", "url": f"{public_url}/mcp"}],
        "capabilities": {"tools": {"listChanged": False}},
        "auth": _auth(public_url),
        "manifest": f"{public_url}/.well-known/mcp/manifest.json",
        "documentation": f"{public_url}/docs",
    }


@blueprint.get("/mcp/manifest")
@operation("getMcpManifest", access="public")
@document_response(McpDocument, 200)
async def get_manifest() -> Response:
    """The MCP tool manifest: tools, their scopes and schemas, and how to authenticate."""
    return json_response(manifest(services().settings.public_url))


@blueprint.get("/.well-known/mcp/manifest.json")
@operation("getMcpManifestWellKnown", access="public")
@document_response(McpDocument, 200)
async def get_well_known_manifest() -> Response:
    """The MCP tool manifest at its well-known address (same document as /mcp/manifest)."""
    return json_response(manifest(services().settings.public_url))


@blueprint.get("/.well-known/mcp.json")
@operation("getMcpServerCard", access="public")
@document_response(McpDocument, 200)
async def get_server_card() -> Response:
    """The static MCP server card: name, version, remote URL, protocol versions, auth."""
    return json_response(server_card(services().settings.public_url))
