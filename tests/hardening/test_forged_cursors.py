"""A forged MCP list cursor (the offset is only base64, not sealed) is refused as invalid
arguments, never an internal error: an offset past the database's 64-bit OFFSET reached it.
It reaches only the caller's own workspace's list either way (the tools scope by the token)."""

from __future__ import annotations

import base64

import pytest

from api.mcp.tools._paging import MAX_OFFSET, decode_cursor
from tests.api.helpers import bearer, create_token, signed_in
from tests.conftest import RunningService
from tests.mcp.helpers import call_tool, rpc_error


def _cursor(kind: str, offset: str) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode()


@pytest.mark.parametrize("offset", [str(2**63), str(10**100), "+5", " 5", "1_0", "\u0665", "-1"])
def test_offsets_no_tool_gives_out_are_refused(offset: str) -> None:
    with pytest.raises(ValueError, match="not a cursor"):
        decode_cursor("runs", _cursor("runs", offset))


def test_offsets_up_to_the_limit_decode() -> None:
    assert decode_cursor("runs", _cursor("runs", "0")) == 0
    assert decode_cursor("runs", _cursor("runs", str(MAX_OFFSET))) == MAX_OFFSET


async def test_a_forged_huge_cursor_is_invalid_arguments_not_an_internal_error(
    service: RunningService,
) -> None:
    async with service.client() as browser:
        await signed_in(browser)
        reader = await create_token(browser, ["read"])
        for name, kind in (("list_runs", "runs"), ("list_analyses", "analyses")):
            forged = _cursor(kind, str(2**63))
            rpc_error(
                await call_tool(browser, name, {"cursor": forged}, bearer(reader)), 200, -32602
            )
