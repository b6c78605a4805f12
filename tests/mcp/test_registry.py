"""The tool registry without a server: paging, result building, failures as `isError`."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from api.http.auth import Principal
from api.http.errors import NotFound
from api.mcp import READ_ONLY, Tool, ToolError
from api.mcp._protocol import RpcError
from api.mcp._registry import ToolRegistry, run_tool
from api.mcp.tools import REGISTRY
from api.mcp.tools._inputs import NoArguments

PRINCIPAL = Principal("usr_1", "a@example.com", "ws_1", "token", frozenset({"read"}), "key_1")


class Count(BaseModel):
    count: int


def _tool(name: str, result: Any = None, error: Exception | None = None) -> Tool:
    async def handler(principal: Principal, arguments: NoArguments) -> Any:
        if error is not None:
            raise error
        return result

    return Tool(
        name, name.title(), f"The {name} tool", "read", NoArguments, Count, READ_ONLY, handler
    )


def test_paging_with_cursor() -> None:
    registry = ToolRegistry([_tool(f"t{i}") for i in range(120)])
    names: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = registry.page(cursor)
        names += [tool["name"] for tool in page["tools"]]
        pages += 1
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert pages == 3 and names == [f"t{i}" for i in range(120)]
    with pytest.raises(RpcError):
        registry.page("dG9vbHM6LTE=")  # "tools:-1"
    with pytest.raises(ValueError, match="duplicate"):
        ToolRegistry([_tool("a"), _tool("a")])


def test_every_tool_is_complete() -> None:
    for tool in REGISTRY:
        descriptor = tool.descriptor()
        assert descriptor["title"] and descriptor["description"]
        assert descriptor["inputSchema"]["type"] == "object"
        assert descriptor["outputSchema"]["type"] == "object"
        assert tool.scope in {"read", "write"}
        if tool.annotations.read_only:
            assert not tool.annotations.destructive


async def test_results_and_failures() -> None:
    ok = await run_tool(_tool("ok", {"count": 3}), PRINCIPAL, NoArguments())
    assert ok["structuredContent"] == {"count": 3} and ok["isError"] is False
    for error, code in (
        (ToolError("no such analysis", code="not_found"), "not_found"),
        (NotFound("analysis"), "not_found"),
        (RuntimeError("boom"), "internal_error"),
    ):
        failed = await run_tool(_tool("bad", error=error), PRINCIPAL, NoArguments())
        assert failed["isError"] is True and "structuredContent" not in failed
        assert code in failed["content"][0]["text"] and "boom" not in failed["content"][0]["text"]
    # A result outside the declared output schema is never handed out.
    wrong = await run_tool(_tool("wrong", {"count": "many"}), PRINCIPAL, NoArguments())
    assert wrong["isError"] is True
