"""Tiny loopback servers for SSRF tests: a canary that counts hits, a redirector."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio


@dataclass
class RawServer:
    """Answers every connection with one fixed HTTP response and counts the connections."""

    response: bytes
    hits: int = 0
    paths: list[str] = field(default_factory=list)
    origin: str = ""

    async def _handle(self, stream: trio.SocketStream) -> None:
        self.hits += 1
        try:
            with trio.move_on_after(2):
                data = await stream.receive_some(65536)
                self.paths.append(data.split(b" ", 2)[1].decode() if data.count(b" ") >= 2 else "")
            await stream.send_all(self.response)
        except trio.BrokenResourceError:
            pass
        finally:
            await stream.aclose()

    async def serve(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        self.origin = f"http://127.0.0.1:{port}"
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, self._handle, listeners)
            task_status.started(self.origin)


def fixed_response(status: str, headers: dict[str, str] | None = None, body: bytes = b"") -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
