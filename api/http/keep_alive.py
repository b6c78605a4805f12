"""Connections that survive an early answer: a response sent before the request body was read.

Hypercorn recycles an HTTP/1.1 connection for the next request only when both sides have
finished their message. When the service answers before the client has finished sending its
body (a 401/403/413 from a before-request check, MCP's Origin and Accept refusals, a handler
that ignores its body such as logout), Hypercorn closes the connection instead, and does so
from inside Quart-Trio's request task, whose nursery the same step has just cancelled: the
close is cancelled half-way, the socket stays open, and the next request on it is never
answered (nor is the connection ever reaped: it is not idle, as far as Hypercorn knows).

This ASGI middleware settles it before the response starts, as Go's net/http does:
- a body still arriving is drained for a moment (at most `DRAIN_BYTES` more, for at most
  `DRAIN_SECONDS`), so the connection serves the next request as if the body had been read;
- a body too large or too slow is not waited for: the response says `Connection: close`, so the
  client knows not to send another request on it;
- the response's last message is sent shielded from cancellation, so whatever close Hypercorn
  starts (this one, or a client's own `Connection: close`) completes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import trio
from hypercorn.typing import ASGIFramework, ASGIReceiveCallable, ASGISendCallable, Scope

DRAIN_BYTES = 256 * 1024
DRAIN_SECONDS = 2.0

Message = Mapping[str, Any]


@dataclass
class BodyProgress:
    """How much of a request body has reached the app, and whether all of it has."""

    declared: int | None  # Content-Length; None for a chunked body
    received: int = 0
    complete: bool = False
    drain_until: int | None = None  # while draining: the most bytes worth waiting for
    settled: trio.Event = field(default_factory=trio.Event)  # complete, or too much to drain

    @classmethod
    def of(cls, headers: Iterable[tuple[bytes, bytes]]) -> BodyProgress:
        declared: int | None = 0  # neither header: no body at all
        for name, value in headers:
            name = name.lower()
            if name == b"content-length" and value.strip().isdigit():
                declared = int(value)
            elif name == b"transfer-encoding":
                declared = None
        return cls(declared, complete=declared == 0)

    def saw(self, message: Message) -> None:
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            self.complete = not message.get("more_body", False)
        elif message["type"] == "http.disconnect":
            self.complete = True
        if self.complete or (self.drain_until is not None and self.received > self.drain_until):
            self.settled.set()

    async def drain(self) -> bool:
        """Wait, briefly, for the rest of the body (read by the app's own receiver); whether
        it all arrived."""
        self.drain_until = self.received + DRAIN_BYTES
        if self.declared is None or self.declared <= self.drain_until:
            with trio.move_on_after(DRAIN_SECONDS):
                await self.settled.wait()
        return self.complete


class KeepAliveAfterEarlyAnswers:
    def __init__(self, app: ASGIFramework) -> None:
        self.app = app

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = BodyProgress.of(scope["headers"])

        async def tracking_receive() -> Any:
            message = await receive()
            body.saw(message)
            return message

        async def settling_send(message: Any) -> None:
            starting = message["type"] == "http.response.start"
            if starting and not body.complete and not await body.drain():
                headers = [(n, v) for n, v in message.get("headers", []) if n != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                with trio.CancelScope(shield=True):
                    await send(message)
                return
            await send(message)

        await self.app(scope, tracking_receive, cast(ASGISendCallable, settling_send))
