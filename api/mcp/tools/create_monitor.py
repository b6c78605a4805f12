"""`create_monitor`: start a monitor (what `POST /api/monitoring/start` does, same validation)."""

from __future__ import annotations

from api.http.auth import Principal
from api.mcp._registry import Annotations, Tool
from api.monitors.actions import monitor_out, start_monitor_in
from api.monitors.schemas import MonitorOut, StartMonitorRequest
from api.services import services

# Creates (never overwrites or deletes), each call a new monitor, and it polls the marketplace.
CREATES_AND_SCRAPES = Annotations(
    read_only=False, destructive=False, idempotent=False, open_world=True
)


async def create_monitor(principal: Principal, arguments: StartMonitorRequest) -> MonitorOut:
    # The REST view's own function: URL checks, minimum interval and quotas are identical.
    backend = services().backend
    return monitor_out(await start_monitor_in(backend, principal.workspace_id, arguments))


TOOL = Tool(
    name="create_monitor",
    title="Create a monitor",
    description=(
        "Start polling a marketplace catalogue URL (`url`, copied from the browser) or the source "
        "of an analysis (`analysis_id`): give exactly one, plus an optional `label` and "
        "`interval_seconds` (default and minimum set by the service; shorter is refused with "
        "`interval_too_short`). Returns the monitor at once with status `paused` and "
        "`bootstrapping` true; a background scrape then makes it `active` (check with "
        "list_monitorings). Each call creates a new monitor."
    ),
    scope="write",
    input_model=StartMonitorRequest,
    output_model=MonitorOut,
    annotations=CREATES_AND_SCRAPES,
    handler=create_monitor,
)
