"""`/api/runs/*`: analysis runs: create, list, read, cancel, replay, delete, log, alerts.

Run states: `queued` -> `running` -> `succeeded` | `failed` | `cancelled`. Cancel moves a
queued or running run to `cancelled` (409 `run_finished` once it has ended); replay creates a
new run with the same inputs (`replay_of` names the original); delete is refused while the run
is queued or running (409 `run_running`). Another workspace's run is a 404.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from quart import Blueprint, Response
from quart_schema import (
    validate_querystring,
    validate_request,
    validate_response,
)

from api.analyses.actions import analysis_in_workspace
from api.http.auth import current_principal
from api.http.errors import Conflict
from api.http.openapi import operation
from api.http.openapi_links import ANALYSIS, MONITOR, RUN
from api.http.schemas import DeletedOut, PageQuery
from api.runs.actions import (
    cancel_run_in,
    create_run_in,
    delete_run_in,
    owned_run,
    replay_run_in,
    run_out,
    runs_out,
)
from api.runs.schemas import AlertsQuery, CreateRunRequest, LogQuery, RunList, RunOut
from api.services import services
from store import RunRecord

blueprint = Blueprint("runs", __name__, url_prefix="/api/runs")

# The alerts file: CSV by default, JSON with `?format=json`.
ALERTS_MEDIA: dict[str, dict[str, Any]] = {
    "text/csv": {"type": "string"},
    "application/json": {
        "type": "object",
        "required": ["run_id", "alerts"],
        "properties": {
            "run_id": {"type": "string"},
            "alerts": {"type": "array", "items": {"type": "object"}},
        },
    },
}
# What an answer that is one run feeds: the run's operations, its monitor's, its analysis'.
RUN_LINKS = (*RUN.links(), *MONITOR.links("monitor_id"), *ANALYSIS.links("analysis_id"))


@blueprint.post("")
@operation("createRun", links=RUN_LINKS)
@validate_request(CreateRunRequest)
@validate_response(RunOut, 201)
async def create_run(data: CreateRunRequest) -> tuple[RunOut, int]:
    """Start an analysis run of a catalogue URL (a one-off scrape) or of a monitor's history.

    A catalogue URL's run reads at most `max_items` listings, by default as many as the plan's
    `items_per_run` allows; a monitor's run analyses the monitor's whole history (bounded by
    the monitor quota, not by items per run) and ignores `max_items`. Over a quota: 403
    `quota_exceeded`, naming the limit and the next plan up that allows it (or none).
    """
    workspace_id = current_principal().workspace_id
    return run_out(await create_run_in(services().backend, workspace_id, data)), 201


@blueprint.get("")
@operation("listRuns")
@validate_querystring(PageQuery)
@validate_response(RunList, 200)
async def list_runs(query_args: PageQuery) -> RunList:
    """The workspace's runs, newest first, paged."""
    runs, total = await runs_out(
        services().store, current_principal().workspace_id, query_args.offset, query_args.page_size
    )
    return RunList(runs=runs, **query_args.fields(total))


@blueprint.get("/<id:run_id>")
@operation("getRun", links=RUN_LINKS)
@validate_response(RunOut, 200)
async def get_run(run_id: str) -> RunOut:
    """State, timings, progress, counts, and the analysis id once it succeeded."""
    return run_out(await _owned(run_id))


@blueprint.delete("/<id:run_id>")
@operation("deleteRun", errors=(409,))
@validate_response(DeletedOut, 200)
async def delete_run(run_id: str) -> DeletedOut:
    """Delete a finished run with its log, alerts and analysis (409 while it runs)."""
    await delete_run_in(services().backend, await _owned(run_id))
    return DeletedOut(id=run_id, deleted=True)


@blueprint.post("/<id:run_id>/cancel")
@operation("cancelRun", errors=(409,), links=RUN_LINKS)
@validate_response(RunOut, 200)
async def cancel_run(run_id: str) -> RunOut:
    """Cancel a queued or running run; it ends `cancelled` within a second."""
    return run_out(await cancel_run_in(services().backend, await _owned(run_id)))


@blueprint.post("/<id:run_id>/replay")
@operation("replayRun", errors=(409,), links=RUN_LINKS)
@validate_response(RunOut, 200)
async def replay_run(run_id: str) -> RunOut:
    """Start a new run with the same inputs; `replay_of` links it to the original."""
    return run_out(await replay_run_in(services().backend, await _owned(run_id)))


@blueprint.get("/<id:run_id>/log")
@operation("getRunLog", success=(200, "The log lines", "text/plain"))
@validate_querystring(LogQuery)
async def run_log(run_id: str, query_args: LogQuery) -> Response:
    """The last `tail_lines` lines of the run's log (1-5000, default 160), as text."""
    run = await _owned(run_id)
    lines = await services().store.runs.log_tail(run.id, query_args.tail_lines)
    text = "".join(f"{at.isoformat(timespec='seconds')} {line}\n" for at, line in lines)
    return Response(text, content_type="text/plain; charset=utf-8")


async def _owned(run_id: str) -> RunRecord:
    """The API caller's run `run_id`; `NotFound` for another workspace's or none."""
    return await owned_run(services().store, run_id, current_principal().workspace_id)


def _alerts_of(result_json: str) -> list[dict[str, Any]]:
    alerts = json.loads(result_json).get("alerts", [])
    return [a for a in alerts if isinstance(a, dict)]


# One row per alert: what, where (the niche in words and its parts), which listing, why.
ALERT_COLUMNS = ("kind", "niche", "category_id", "brand", "size", "condition", "item_id",
                 "reason", "figures")  # fmt: skip


def _alert_row(alert: dict[str, Any]) -> dict[str, object]:
    niche = alert.get("niche") if isinstance(alert.get("niche"), dict) else {}
    assert isinstance(niche, dict)
    return {
        "kind": alert.get("kind"),
        "niche": niche.get("label"),
        **{part: niche.get(part) for part in ("category_id", "brand", "size", "condition")},
        "item_id": alert.get("item_id"),
        "reason": alert.get("reason"),
        "figures": alert.get("figures"),
    }


def _cell(value: object) -> object:
    """A CSV cell; text that a spreadsheet would run as a formula is defused (titles and
    brands come from the marketplace, so they are untrusted)."""
    if isinstance(value, dict | list):
        value = json.dumps(value)
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


@blueprint.get("/<id:run_id>/alerts-download")
@operation("downloadRunAlerts", success=(200, "Alerts as CSV or JSON", ALERTS_MEDIA), errors=(409,))
@validate_querystring(AlertsQuery)
async def alerts_download(run_id: str, query_args: AlertsQuery) -> Response:
    """The run's alerts as a file: CSV (default) or JSON with `?format=json`."""
    run = await _owned(run_id)
    if run.analysis_id is None:
        raise Conflict(f"Run {run.id} has no analysis ({run.state})", code="no_analysis")
    analysis = await analysis_in_workspace(services().store, run.analysis_id, run.workspace_id)
    alerts = _alerts_of(analysis.result_json)
    filename = f"nichescope-alerts-{run.id}.{query_args.format}"
    disposition = {"Content-Disposition": f'attachment; filename="{filename}"'}
    if query_args.format == "json":
        return Response(
            json.dumps({"run_id": run.id, "alerts": alerts}),
            content_type="application/json",
            headers=disposition,
        )
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=ALERT_COLUMNS, extrasaction="ignore")
    writer.writeheader()  # also with no alert: a spreadsheet still knows the columns
    for alert in alerts:
        writer.writerow({k: _cell(v) for k, v in _alert_row(alert).items()})
    return Response(buffer.getvalue(), content_type="text/csv; charset=utf-8", headers=disposition)
