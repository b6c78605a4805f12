"""MCP sessions: signed ids that remember the negotiated protocol version.

A session is not a credential (every `tools/call` brings its own PAT); it only carries the
negotiated protocol version. So the id is self-describing and signed with the service key:
any node of a cluster, or the same node after a restart, accepts it without shared state, and
a forged or mangled id is unknown (404). Ending a session (DELETE) is remembered in this
node's memory only: another node would still accept it, which is harmless because the id
grants nothing.
"""

from __future__ import annotations

import hmac
import secrets
from collections import OrderedDict

from api.http.security import TokenHasher
from api.mcp.wire import SUPPORTED_VERSIONS

_SIGNATURE_CHARS = 32


class McpSessions:
    """Issues, resolves and ends session ids of the form `<random>.<version>.<signature>`."""

    def __init__(self, hasher: TokenHasher, *, max_ended: int = 100_000) -> None:
        self._hasher = hasher
        self._max_ended = max_ended
        self._ended: OrderedDict[str, None] = OrderedDict()

    def _sign(self, nonce: str, version: str) -> str:
        return self._hasher.digest(f"mcp-session:{nonce}:{version}")[:_SIGNATURE_CHARS]

    def issue(self, version: str) -> str:
        nonce = secrets.token_urlsafe(18)
        return f"{nonce}.{version}.{self._sign(nonce, version)}"

    def resolve(self, session_id: str) -> str | None:
        """The negotiated version of a live session, or None (unknown, forged or ended)."""
        if len(session_id) > 200 or session_id in self._ended:
            return None
        nonce, _, rest = session_id.partition(".")
        version, _, signature = rest.partition(".")
        if not nonce or version not in SUPPORTED_VERSIONS:
            return None
        if not hmac.compare_digest(signature, self._sign(nonce, version)):
            return None
        return version

    def end(self, session_id: str) -> bool:
        """End a live session; False if it was not one (already ended, unknown)."""
        if self.resolve(session_id) is None:
            return False
        self._ended[session_id] = None
        while len(self._ended) > self._max_ended:
            self._ended.popitem(last=False)
        return True
