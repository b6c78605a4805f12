"""The tool registry: what a tool is, how tools are listed (paged) and called.

A tool is declared once, as a `Tool` with pydantic input and output models: the models give
the `inputSchema`/`outputSchema` that clients see *and* validate the arguments and the result
at run time, so the schema a client reads is the one the server enforces.

An answer fits an agent's context window: no tool answers more than `MAX_ANSWER_BYTES` of
JSON. Tools keep their default answers well below it (default limits); a call that would still
pass it is answered `answer_too_large`, naming the arguments that ask for less (`Tool.smaller`),
rather than with the whole document.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from quart import json

from api.http.auth import Principal
from api.http.errors import ApiError
from api.http.storable import storable_text
from api.mcp._protocol import INVALID_PARAMS, RpcError
from store import DatabaseUnavailable

log = logging.getLogger(__name__)

Scope = Literal["read", "write"]
Handler = Callable[[Principal, Any], Awaitable[Mapping[str, Any] | BaseModel]]
PAGE_SIZE = 50
# The most one tool call answers: its JSON document (the text block; `structuredContent` is
# the same document), in UTF-8 bytes.
MAX_ANSWER_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Annotations:
    """Behaviour hints clients use to decide on confirmation prompts: keep them truthful."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool

    def as_json(self, title: str) -> dict[str, Any]:
        return {
            "title": title,
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


READ_ONLY = Annotations(read_only=True, destructive=False, idempotent=True, open_world=False)


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool. `handler(principal, arguments)` gets the validated `input_model` instance and
    returns the result (a mapping or model) that must validate against `output_model`.

    A handler signals a failure the caller can act on by raising `ToolError` or an `ApiError`
    (NotFound, Conflict, quota...): the call answers a result with `isError`.
    """

    name: str
    title: str
    description: str
    scope: Scope
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    annotations: Annotations
    handler: Handler
    # How to ask this tool for less, for the agent whose call would answer more than
    # `MAX_ANSWER_BYTES`; None: a smaller `limit` when the tool takes one (`how_to_shrink`).
    smaller: str | None = None

    def how_to_shrink(self) -> str:
        if self.smaller is not None:
            return self.smaller
        if "limit" in self.input_model.model_fields:
            return "Pass a smaller `limit` and page on with `cursor` (the answer's `nextCursor`)."
        return "Read the same data with the REST API (the same token; see /docs)."

    def descriptor(self) -> dict[str, Any]:
        """The `tools/list` entry."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": _object_schema(self.input_model),
            "outputSchema": _object_schema(self.output_model),
            "annotations": self.annotations.as_json(self.title),
            "_meta": {"nichescope/scope": self.scope},
        }


class ToolError(Exception):
    """A tool failed in a way the agent should read (answered as a result with `isError`)."""

    def __init__(self, message: str, *, code: str = "tool_error") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def _object_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(mode="serialization")
    schema.setdefault("type", "object")
    return schema


class ToolRegistry:
    """The tools on offer, in declaration order; names are unique."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"duplicate tool name {tool.name!r}")
            self._tools[tool.name] = tool

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def page(self, cursor: Any) -> dict[str, Any]:
        """A `tools/list` result from `cursor` (opaque; None for the first page)."""
        start = _decode_cursor(cursor)
        tools = list(self._tools.values())
        result: dict[str, Any] = {
            "tools": [tool.descriptor() for tool in tools[start : start + PAGE_SIZE]]
        }
        if start + PAGE_SIZE < len(tools):
            result["nextCursor"] = _encode_cursor(start + PAGE_SIZE)
        return result


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"tools:{offset}".encode()).decode()


def _decode_cursor(cursor: Any) -> int:
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(str(cursor).encode()).decode()
        prefix, _, offset = text.partition(":")
        value = int(offset)
    except (binascii.Error, UnicodeDecodeError, ValueError) as err:
        raise RpcError(INVALID_PARAMS, "Invalid cursor") from err
    if prefix != "tools" or value < 0:
        raise RpcError(INVALID_PARAMS, "Invalid cursor")
    return value


def parse_arguments(tool: Tool, arguments: Any) -> BaseModel:
    """The validated input model, or `RpcError(-32602)` listing what is wrong."""
    try:
        storable_text(arguments)
    except ValueError as err:
        raise RpcError(INVALID_PARAMS, f"Invalid arguments for tool {tool.name!r}: {err}") from err
    try:
        return tool.input_model.model_validate(arguments)
    except ValidationError as err:
        problems = [
            {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
            for e in err.errors(include_url=False, include_context=False)
        ]
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid arguments for tool {tool.name!r}",
            data={"errors": problems},
        ) from err


def answer_text(document: dict[str, Any]) -> str:
    """The text block of a result: compact JSON, non-ASCII as it is (what an agent reads)."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def answer_bytes(text: str) -> int:
    # Lone surrogates (never stored, but never fatal here either) count as their 3 bytes.
    return len(text.encode("utf-8", "surrogatepass"))


def _text_result(
    document: dict[str, Any], *, is_error: bool, text: str | None = None
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": answer_text(document) if text is None else text}],
        "isError": is_error,
    }
    if not is_error:
        result["structuredContent"] = document
    return result


def _failure(code: str, message: str, suggest: list[str] | None = None) -> dict[str, Any]:
    return _text_result(
        {"error": {"code": code, "message": message, "suggest": suggest or []}}, is_error=True
    )


async def run_tool(tool: Tool, principal: Principal, arguments: BaseModel) -> dict[str, Any]:
    """Call the tool and build its `CallToolResult`.

    Failures become results with `isError` (the agent reads them and can correct itself):
    `ToolError`/`ApiError` with their message, an unavailable database as `unavailable`, any
    other `Exception` as `internal_error` (logged; no trace leaks). Cancellation propagates.
    """
    try:
        raw = await tool.handler(principal, arguments)
    except ToolError as err:
        return _failure(err.code, err.message)
    except ApiError as err:
        return _failure(err.code, err.message, err.suggest)
    except DatabaseUnavailable:
        return _failure("unavailable", "The database is not answering; try again shortly")
    except Exception:
        log.exception("tool %s failed", tool.name)
        return _failure("internal_error", "Something went wrong on our side")
    try:
        output = tool.output_model.model_validate(
            raw.model_dump() if isinstance(raw, BaseModel) else raw
        )
    except ValidationError:
        # Our bug, not the caller's: never hand out a result that breaks the declared schema.
        log.exception("tool %s returned a result outside its output schema", tool.name)
        return _failure("internal_error", "Something went wrong on our side")
    document = output.model_dump(mode="json")
    text = answer_text(document)
    size = answer_bytes(text)
    if size > MAX_ANSWER_BYTES:
        return _too_large(tool, size)
    return _text_result(document, is_error=False, text=text)


def _too_large(tool: Tool, size: int) -> dict[str, Any]:
    """The failure that stands for an answer over `MAX_ANSWER_BYTES` (never sent whole)."""
    log.info("tool %s answer of %d bytes withheld (over %d)", tool.name, size, MAX_ANSWER_BYTES)
    done = "" if tool.annotations.read_only else " The call itself was carried out."
    hint = tool.how_to_shrink()
    return _failure(
        "answer_too_large",
        f"The answer of {tool.name} would be {size // 1024} KB, over the "
        f"{MAX_ANSWER_BYTES // 1024} KB a tool answers at most.{done} {hint}",
        [hint],
    )
