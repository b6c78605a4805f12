"""/mcp driven by the official `mcp` Python SDK client (streamable HTTP transport + ClientSession),
running directly under Trio through AnyIO."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.api.helpers import bearer, create_token, signed_in
from tests.conftest import RunningService

T = TypeVar("T")


async def with_session(
    service: RunningService,
    headers: dict[str, str],
    work: Callable[[ClientSession], Awaitable[T]],
    statuses: list[tuple[int, Any]] | None = None,
) -> T:
    """Open an SDK session on /mcp (recording the status of every POST) and run `work` in it."""

    async def record(response: httpx2.Response) -> None:
        if statuses is not None and response.request.method == "POST":
            statuses.append((response.status_code, response.headers))

    async with (
        httpx2.AsyncClient(headers=headers, timeout=10, event_hooks={"response": [record]}) as http,
        streamable_http_client(f"{service.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await work(session)


async def test_sdk_initialize_list_and_call_whoami(service: RunningService) -> None:
    async with service.client() as browser:
        email = await signed_in(browser)
        token = await create_token(browser, ["read"])

    async def work(session: ClientSession) -> tuple[Any, Any, Any]:
        listed = await session.list_tools()
        result = await session.call_tool("whoami", {})
        return session.initialize_result, listed, result

    initialized, listed, result = await with_session(service, bearer(token), work)
    assert initialized.protocol_version == "2025-06-18"
    assert initialized.server_info.name == "nichescope"
    whoami = next(tool for tool in listed.tools if tool.name == "whoami")
    assert whoami.annotations.read_only_hint is True
    assert whoami.output_schema["type"] == "object"
    assert result.is_error is False
    assert result.structured_content["user"]["email"] == email
    assert result.structured_content["auth"]["scopes"] == ["read"]
    assert json.loads(result.content[0].text) == result.structured_content


async def test_sdk_refusals_are_401_and_403(service: RunningService) -> None:
    async with service.client() as browser:
        await signed_in(browser)
        write_only = await create_token(browser, ["write"])

    async def call(session: ClientSession) -> MCPError:
        # Caught here: escaping the SDK's task group it would arrive wrapped in a group.
        with pytest.raises(MCPError) as refused:
            await session.call_tool("whoami", {})
        return refused.value

    for headers, status in (({}, 401), (bearer("nsc_" + "y" * 43), 401), (bearer(write_only), 403)):
        statuses: list[tuple[int, Any]] = []
        await with_session(service, headers, call, statuses)
        refused = [(code, h) for code, h in statuses if code >= 400]
        assert [code for code, _ in refused] == [status], statuses
        assert refused[0][1]["www-authenticate"].startswith("Bearer")
