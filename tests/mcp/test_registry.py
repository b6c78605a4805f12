"""The tool registry without a server: paging, result building, failures as `isError`."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from pydantic import BaseModel

from api.http.auth import Principal
from api.http.errors import NotFound
from api.mcp import READ_ONLY, Annotations, Tool, ToolError
from api.mcp._protocol import RpcError
from api.mcp._registry import MAX_ANSWER_BYTES, ToolRegistry, run_tool
from api.mcp.tools import REGISTRY
from api.mcp.tools._inputs import NoArguments
from api.mcp.tools._paging import PageArguments, fitting

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


class Text(BaseModel):
    text: str


async def test_an_answer_over_64_kb_is_withheld_with_how_to_ask_for_less() -> None:
    async def handler(principal: Principal, arguments: NoArguments) -> Text:
        return Text(text="x" * MAX_ANSWER_BYTES)

    class Paged(NoArguments):
        limit: int = 20

    base = Tool("big", "Big", "A big answer", "read", NoArguments, Text, READ_ONLY, handler)
    answers = {
        "plain": base,
        "paged": replace(base, input_model=Paged),
        "told": replace(base, smaller="Pass fewer `fields`."),
        "writes": replace(base, annotations=Annotations(False, False, False, True)),
    }
    errors = {}
    for name, tool in answers.items():
        result = await run_tool(tool, PRINCIPAL, NoArguments())
        assert result["isError"] is True and "structuredContent" not in result, name
        errors[name] = json.loads(result["content"][0]["text"])["error"]
        assert errors[name]["code"] == "answer_too_large" and "64 KB" in errors[name]["message"]
        assert errors[name]["suggest"] == [tool.how_to_shrink()]
    assert "`limit`" in errors["paged"]["message"] and "`cursor`" in errors["paged"]["message"]
    assert "REST" in errors["plain"]["message"]
    assert "fewer `fields`" in errors["told"]["message"]
    assert "carried out" in errors["writes"]["message"]
    assert "carried out" not in errors["plain"]["message"]
    # Just under the limit is answered, as compact UTF-8 JSON.
    fits = "é" * ((MAX_ANSWER_BYTES - len('{"text":""}')) // 2)
    result = await run_tool(_tool("fits", {"count": 1}), PRINCIPAL, NoArguments())
    assert result["content"][0]["text"] == '{"count":1}'
    exact = replace(base, handler=_returning(Text(text=fits)))
    answered = await run_tool(exact, PRINCIPAL, NoArguments())
    assert answered["isError"] is False
    assert len(answered["content"][0]["text"].encode()) <= MAX_ANSWER_BYTES


def _returning(answer: BaseModel) -> Any:
    async def handler(principal: Principal, arguments: NoArguments) -> BaseModel:
        return answer

    return handler


class Blob(BaseModel):
    text: str


class BlobPage(PageArguments):
    kind = "blobs"


def test_a_page_cut_to_fit_goes_on_after_its_last_item() -> None:
    arguments = BlobPage(limit=100)
    items = [Blob(text=f"{i:04d}" + "x" * 2000) for i in range(100)]
    shown = fitting(items)
    assert 20 < len(shown) < 40 and shown == items[: len(shown)]
    page = arguments.fields(100, len(shown))
    assert page["total"] == 100
    assert page["nextCursor"] is not None
    following = BlobPage(cursor=page["nextCursor"], limit=100)
    assert following.offset == len(shown)
    # What fits is answered whole; one item too large on its own is still answered (the
    # registry then withholds it as answer_too_large).
    assert fitting(items[:5]) == items[:5]
    assert fitting([Blob(text="x" * 70_000)]) == [Blob(text="x" * 70_000)]
    assert arguments.fields(5, 5)["nextCursor"] is None
