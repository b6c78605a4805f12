"""Reading one answer: its body under a byte cap, and never a connection reused half-read.

Policy: a declared `Content-Length` over the cap fails with `ResponseTooLarge` before any of
the body is read, and a streamed body fails the moment it passes the cap. With `enough`, a
successful (2xx) body is read only until the caller has what it needs; the response is then
closed unread, which drops its connection instead of returning it half-read to the pool. The
response is closed whatever happens (errors and cancellation included). Conflicting cookies
give no cookies, never an error. Transport errors propagate as httpx raises them (the client
turns them into marketplace errors).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from .errors import ParseError, ResponseTooLarge

EnoughRead = Callable[[bytes], bool]
"""`enough(body_so_far)`: True once the caller has what it needs (the rest is not read)."""


@dataclass(frozen=True, slots=True)
class MarketResponse:
    """A fully read answer (body within the size cap)."""

    url: str
    status: int
    headers: dict[str, str]
    cookies: dict[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The decoded JSON body; `ParseError` (never `ValueError`) when it is not JSON."""
        try:
            return json.loads(self.content)
        except (ValueError, UnicodeDecodeError) as err:
            raise ParseError(f"JSON from {self.url[:200]}", str(err)) from err


async def read_capped(
    http: httpx.AsyncClient,
    url: str,
    headers: dict[str, str],
    limit: int,
    enough: EnoughRead | None = None,
) -> MarketResponse:
    """GET `url` through `http` and read at most `limit` bytes of it (see the module doc)."""
    request = http.build_request("GET", url, headers=headers)
    response = await http.send(request, stream=True)
    try:
        declared = response.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > limit:
            raise ResponseTooLarge(url, limit)
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > limit:
                raise ResponseTooLarge(url, limit)
            # Only a successful page is worth stopping early on; closing the response
            # unread drops its connection instead of returning it half-read to the pool.
            if enough is not None and response.is_success and enough(bytes(body)):
                break
    finally:
        await response.aclose()
    try:
        cookies = {k: v for k, v in response.cookies.items()}
    except httpx.CookieConflict:
        cookies = {}
    return MarketResponse(
        url=url,
        status=response.status_code,
        headers={k.lower(): v for k, v in response.headers.items()},
        cookies=cookies,
        content=bytes(body),
    )
