"""A loopback HTTP receiver for webhook and Discord deliveries: records each request and
answers 200 (or what `status` says). Enough HTTP/1.1 for one request per connection."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import trio


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    port: int = 0
    status: int = 200
    requests: list[Received] = field(default_factory=list)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _handle(self, stream: trio.SocketStream) -> None:
        data = b""
        with trio.move_on_after(10):
            while b"\r\n\r\n" not in data:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {
                k.strip().lower(): v.strip()
                for k, _, v in (line.partition(":") for line in lines[1:])
            }
            length = int(headers.get("content-length", "0"))
            while len(body) < length:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                body += chunk
            self.requests.append(Received(method, path, headers, body))
            answer = b'{"id": "1"}'
            await stream.send_all(
                f"HTTP/1.1 {self.status} X\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(answer)}\r\nConnection: close\r\n\r\n".encode()
                + answer
            )
        await stream.aclose()


async def start_receiver(nursery: trio.Nursery) -> Receiver:
    receiver = Receiver()
    listeners = await nursery.start(
        functools.partial(trio.serve_tcp, receiver._handle, 0, host="127.0.0.1")
    )
    receiver.port = listeners[0].socket.getsockname()[1]
    return receiver
