"""The tools on offer. A tool whose capability does not exist yet is not listed.

Adding a tool is one module and one line:

1. `api/mcp/tools/list_monitorings.py`: an input model (pydantic, `extra="forbid"`; use
   `NoArguments` for none), an output model (a JSON object: wrap lists as `{"monitors": [...]}`),
   `async def handler(principal, arguments) -> dict | model` that calls the same store/engine
   function as the REST view with `principal.workspace_id` (raise `ToolError`, `NotFound` or any
   `ApiError` for a failure the agent should read), and
   `TOOL = Tool(name=..., title=..., description=..., scope="read"|"write", input_model=...,
   output_model=..., annotations=READ_ONLY or Annotations(...), handler=...)`.
2. Add `list_monitorings.TOOL` to `REGISTRY` below.

The models become `inputSchema`/`outputSchema` and validate both directions at run time;
`tests/mcp/test_registry.py::test_every_tool_is_complete` checks the declaration.
"""

from __future__ import annotations

from api.mcp._registry import ToolRegistry
from api.mcp.tools import (
    create_analysis,
    create_monitor,
    get_analysis,
    list_analyses,
    list_monitorings,
    list_runs,
    notification_rules,
    price_book,
    whoami,
)

REGISTRY = ToolRegistry(
    [
        whoami.TOOL,
        list_analyses.TOOL,
        get_analysis.TOOL,
        list_monitorings.TOOL,
        list_runs.TOOL,
        create_monitor.TOOL,
        create_analysis.TOOL,
        notification_rules.LIST_TOOL,
        notification_rules.SET_TOOL,
        price_book.TOOL,
    ]
)

__all__ = ["REGISTRY"]
