"""The plumbing of the ASGI apps the tests serve on loopback (fakes and receivers): the
lifespan handshake, reading a request's body, sending an answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from hypercorn.config import Config

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def lifespan(receive: Receive, send: Send) -> None:
    """Answer the server's lifespan messages until it shuts down."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def read_body(receive: Receive, limit: int | None = None) -> bytes:
    """The request's body, whole (or cut once past `limit` bytes, or at a disconnect)."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body") or (limit is not None and len(body) > limit):
            return body


async def respond(
    send: Send, status: int, headers: Sequence[tuple[bytes, bytes]], body: bytes
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    await send({"type": "http.response.body", "body": body})


def loopback_config(graceful_timeout: float = 1) -> Config:
    """hypercorn's configuration for a test server: an ephemeral 127.0.0.1 port, no access
    log."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.graceful_timeout = graceful_timeout
    return config
