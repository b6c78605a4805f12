"""`list_monitorings`: the workspace's monitors, newest first (what `GET /api/monitoring` lists)."""

from __future__ import annotations

from pydantic import BaseModel

from api.http.auth import Principal
from api.mcp._registry import READ_ONLY, Tool
from api.mcp.tools._paging import NEXT_CURSOR, PAGING_DOC, PageArguments, fitting
from api.monitors.actions import counted
from api.monitors.schemas import MonitorOut
from api.services import services


class ListMonitoringsArguments(PageArguments):
    kind = "monitors"


class MonitorPage(BaseModel):
    monitors: list[MonitorOut]
    total: int
    nextCursor: str | None = NEXT_CURSOR


async def list_monitorings(
    principal: Principal, arguments: ListMonitoringsArguments
) -> MonitorPage:
    # The REST view's store call; the store answers the whole (small) list, paged here.
    store = services().store
    monitors = await store.monitors.in_workspace(principal.workspace_id)
    page = monitors[arguments.offset : arguments.offset + arguments.limit]
    shown = fitting(await counted(store, page))
    return MonitorPage(monitors=shown, **arguments.fields(len(monitors), len(shown)))


TOOL = Tool(
    name="list_monitorings",
    title="List monitors",
    description=(
        "The workspace's monitors (catalogue URLs polled on an interval), newest first, with "
        "status (paused while bootstrapping, active, error), interval, last/next poll, error "
        "counts and listing `counts` (open, reserved, sold, likely_sold, deleted). " + PAGING_DOC
    ),
    scope="read",
    input_model=ListMonitoringsArguments,
    output_model=MonitorPage,
    annotations=READ_ONLY,
    handler=list_monitorings,
)
