"""What the MCP endpoint's HTTP shows of the protocol: its headers and the revisions it speaks.
Public, so that the OpenAPI document describes them without reaching into the server."""

from __future__ import annotations

# Newest first. 2025-06-18 is the revision we implement; the older ones are those the official
# SDK still negotiates, and a tools-only JSON server answers them the same way.
SUPPORTED_VERSIONS: tuple[str, ...] = ("2025-06-18", "2025-03-26", "2024-11-05")

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
