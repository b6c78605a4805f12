"""Run pages: list and start, detail with progress and log tail, cancel, replay, delete."""

from __future__ import annotations

from pydantic import ValidationError
from quart import Response, request

from api.billing.quotas import plan_limits
from api.http.errors import ApiError
from api.http.schemas import page_count
from api.naming import run_title, run_titles
from api.runs.actions import cancel_run_in, create_run_in, delete_run_in, replay_run_in
from api.runs.actions import owned_run as owned
from api.runs.schemas import MAX_ITEMS_LIMIT, CreateRunRequest
from api.services import services
from api.web._blueprint import blueprint
from api.web._render import confirm_delete, page, requested_page, see_other
from api.web._words import explain
from api.web.account_pages import signed_in, signed_in_form, signed_in_record
from store import MonitorRecord, RunRecord

PAGE_SIZE = 20
LOG_LINES = 40
NOTICES = {
    "started": "Your analysis is queued. This page follows its progress.",
    "cancelled": "The analysis was cancelled.",
    "replayed": "A new analysis with the same inputs has started.",
    "deleted": "The analysis run and its results were deleted.",
}


async def _list_page(workspace_id: str, *, status: int = 200, **context: object) -> Response:
    store = services().store
    current = requested_page()
    runs, total = await store.runs.in_workspace(workspace_id, (current - 1) * PAGE_SIZE, PAGE_SIZE)
    monitors = await store.monitors.in_workspace(workspace_id)
    limits = await plan_limits(workspace_id, store=store)
    # An empty box means "as many as the plan allows": the form never suggests more.
    context.setdefault(
        "form",
        {"url": "", "label": "", "monitor_id": request.args.get("monitor", ""), "max_items": ""},
    )
    context.setdefault("errors", {})
    return await page(
        "runs.html",
        status=status,
        runs=runs,
        run_names=await run_titles(store, workspace_id, runs),
        items_allowed=limits.items_per_run if limits.can_create else None,
        monitors=monitors,
        current=current,
        pages=page_count(total, PAGE_SIZE),
        notices=NOTICES,
        **context,
    )


@blueprint.get("/runs")
async def runs() -> Response:
    who = await signed_in()
    return await _list_page(who.workspace_id)


@blueprint.post("/runs")
async def start_run() -> Response:
    who = await signed_in_form()
    form = await request.form
    values = {k: form.get(k, "").strip() for k in ("url", "label", "monitor_id", "max_items")}
    source = form.get("source", "monitor" if values["monitor_id"] else "url")
    values["source"] = source  # a form shown again keeps the source that was chosen
    errors: dict[str, str] = {}
    if source == "monitor" and not values["monitor_id"]:
        errors["monitor_id"] = "Pick the monitor whose history to analyse."
    if source != "monitor" and not values["url"]:
        errors["url"] = "Paste the address of a catalogue page."
    # Only a catalogue page's run reads a number of listings; a monitor's whole history is
    # analysed, so whatever the (hidden) box holds is not looked at.
    items = values["max_items"] if source != "monitor" else ""
    if items and not (items.isascii() and items.isdigit()):
        errors["max_items"] = "Enter a whole number of listings, such as 200, or leave it empty."
    if errors:
        return await _list_page(who.workspace_id, status=422, form=values, errors=errors)
    try:
        data = CreateRunRequest(
            url=values["url"] if source != "monitor" else None,
            monitor_id=values["monitor_id"] if source == "monitor" else None,
            label=values["label"] or None,
            max_items=int(items) if items else None,
        )
    except ValidationError:
        errors["max_items"] = (
            f"Use between 1 and {MAX_ITEMS_LIMIT:,} listings (or leave it empty) and a name "
            "under 200 characters."
        )
        return await _list_page(who.workspace_id, status=422, form=values, errors=errors)
    try:
        run = await create_run_in(services().backend, who.workspace_id, data)
    except ApiError as err:
        return await _list_page(
            who.workspace_id, status=err.status, form=values, error=explain(err)
        )
    return see_other(f"/runs/{run.id}?notice=started")


async def _monitor_of(run: RunRecord) -> MonitorRecord | None:
    """The monitor whose history `run` analyses (None for a catalogue page's, or when gone)."""
    if not run.monitor_id:
        return None
    return await services().store.monitors.get(run.monitor_id, run.workspace_id)


@blueprint.get("/runs/<id:run_id>")
async def run_detail(run_id: str) -> Response:
    who = await signed_in()
    store = services().store
    run = await owned(store, run_id, who.workspace_id)
    lines = await store.runs.log_tail(run.id, LOG_LINES)
    monitor = await _monitor_of(run)
    return await page(
        "run.html",
        run=run,
        title=run_title(run, monitor),
        monitor=monitor,
        log=lines,
        log_lines=LOG_LINES,
        live=run.state in ("queued", "running"),
        notices=NOTICES,
    )


@blueprint.post("/runs/<id:run_id>/cancel")
async def cancel_run(run_id: str) -> Response:
    await cancel_run_in(services().backend, await signed_in_record(owned, run_id))
    return see_other(f"/runs/{run_id}?notice=cancelled")


@blueprint.post("/runs/<id:run_id>/replay")
async def replay_run(run_id: str) -> Response:
    replay = await replay_run_in(services().backend, await signed_in_record(owned, run_id))
    return see_other(f"/runs/{replay.id}?notice=replayed")


@blueprint.get("/runs/<id:run_id>/delete")
async def confirm_delete_run(run_id: str) -> Response:
    run = await signed_in_record(owned, run_id)
    monitor = await _monitor_of(run)
    return await confirm_delete(
        f"/runs/{run.id}",
        title=f"Delete the analysis run “{run_title(run, monitor)}”?",
        message="This deletes the run with its log, alerts and results. This cannot be undone.",
        button="Delete run",
    )


@blueprint.post("/runs/<id:run_id>/delete")
async def delete_run(run_id: str) -> Response:
    await delete_run_in(services().backend, await signed_in_record(owned, run_id))
    return see_other("/runs?notice=deleted")
