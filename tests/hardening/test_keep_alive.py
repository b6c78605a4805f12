"""A keep-alive connection goes on after an early answer (#21, item 4).

Before: when the service answered before reading the request body (a 401, a 405, MCP's Origin
and Accept refusals, logout, which ignores its body) and the body arrived afterwards, the next
request on that connection was never answered: Hypercorn's close of the half-read connection ran
in a task Quart-Trio had just cancelled (`api/http/keep_alive.py`). Now such a body is drained
and the connection serves the next request; a body too large to wait for ends the connection cleanly
(`Connection: close`, then end of stream), never a hang.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import trio

from tests.conftest import RunningService

DEADLINE = 30  # generous: a busy machine is slow, a stalled connection never answers at all
NEXT_REQUEST = b"GET /health HTTP/1.1\r\nHost: testserver.local\r\n\r\n"
EVIL_ORIGIN = "http://evil.example"


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    """HTTP framing does not depend on the database: SQLite only."""
    shutil.copy(sqlite_template, tmp_path / "test.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"


class RawConnection:
    """One HTTP/1.1 connection written and read byte by byte, as an attacker would."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def _fill(self) -> bool:
        chunk = await self.stream.receive_some(65536)
        self.buffer += chunk
        return bool(chunk)

    async def response(self) -> tuple[int, dict[str, str]] | None:
        """The next response's status and headers (its body skipped); None at end of stream."""
        with trio.fail_after(DEADLINE):
            while b"\r\n\r\n" not in self.buffer:
                if not await self._fill():
                    return None
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            status_line, *lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines)}
            length = int(headers.get("content-length", "0"))
            while len(self.buffer) < length:
                if not await self._fill():
                    return None
            self.buffer = self.buffer[length:]
            return int(status_line.split()[1]), headers

    async def end_of_stream(self) -> bool:
        with trio.fail_after(DEADLINE):
            try:
                return not await self._fill()
            except trio.BrokenResourceError:  # a reset is an end too
                return True


async def connect(service: RunningService) -> RawConnection:
    host, port = service.url.removeprefix("http://").rsplit(":", 1)
    return RawConnection(await trio.open_tcp_stream(host, int(port)))


def post_head(path: str, length: int, *extra: str) -> bytes:
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: testserver.local",
        "Content-Type: application/json",
        f"Content-Length: {length}",
        *extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


EARLY_ANSWERS = [
    pytest.param("/api/auth/logout", (), 200, id="logout-ignores-its-body"),
    pytest.param("/api/monitoring/start", (), 401, id="401-before-the-body"),
    pytest.param("/health", (), 405, id="405-before-the-body"),
    pytest.param("/mcp", (f"Origin: {EVIL_ORIGIN}",), 403, id="mcp-origin-refused"),
    pytest.param("/mcp", ("Accept: text/html",), 406, id="mcp-accept-refused"),
]


@pytest.mark.parametrize(("path", "extra", "status"), EARLY_ANSWERS)
async def test_a_body_sent_after_an_early_answer_leaves_the_connection_usable(
    service: RunningService, path: str, extra: tuple[str, ...], status: int
) -> None:
    body = b'{"padding": "' + b"x" * 2000 + b'"}'
    connection = await connect(service)
    await connection.send(post_head(path, len(body), *extra))
    await trio.sleep(0.2)  # the service answers from the headers alone; the body comes later
    await connection.send(body + NEXT_REQUEST)
    first = await connection.response()
    assert first is not None and first[0] == status, first
    second = await connection.response()
    assert second is not None and second[0] == 200, "the next request was never answered"


async def test_a_body_that_never_comes_ends_the_connection_instead_of_hanging(
    service: RunningService,
) -> None:
    connection = await connect(service)
    await connection.send(post_head("/api/monitoring/start", 5000))
    answer = await connection.response()
    assert answer is not None and answer[0] == 401
    assert answer[1].get("connection") == "close"
    assert await connection.end_of_stream()


async def test_a_body_too_large_to_wait_for_is_refused_and_the_connection_ended(
    service: RunningService,
) -> None:
    connection = await connect(service)
    await connection.send(post_head("/api/auth/logout", 50 * 1024 * 1024))
    await connection.send(b"x" * 1000)
    answer = await connection.response()
    assert answer is not None and answer[0] == 413
    assert answer[1].get("connection") == "close"
    assert await connection.end_of_stream()


async def test_a_reused_httpx_connection_survives_refusals(service: RunningService) -> None:
    """The way an MCP client meets it: one pooled connection, a refusal of a body still being
    uploaded, then the next call on the same connection."""
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "padding": "' + b"x" * 4000 + b'"}'

    async def uploading() -> AsyncIterator[bytes]:
        yield body[:100]
        await trio.sleep(0.1)
        yield body[100:]

    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with service.client(limits=limits) as client:
        for headers in ({"Origin": EVIL_ORIGIN}, {"Accept": "text/html"}):
            for _ in range(3):
                refused = await client.post(
                    "/mcp",
                    content=uploading(),
                    headers={
                        **headers,
                        "Content-Type": "application/json",
                        "Content-Length": str(len(body)),
                    },
                )
                assert refused.status_code in (403, 406)
                assert (await client.get("/health")).status_code == 200
