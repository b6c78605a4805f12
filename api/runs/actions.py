"""Run use cases shared by the REST handlers (`rest.py`), the web pages and the MCP tools.

Validation beyond the request schema (the catalogue URL's site and the marketplace's check),
the plan's quotas (runs per day, items per run), and the calls into the engine. Each function
takes what it acts on (the `Store`, or a `Backend` when it asks the engine or reads the
settings): the handlers pass them in, and nothing here needs a request. Another workspace's
run is a 404.
"""

from __future__ import annotations

from datetime import UTC, datetime

from api.backend import Backend
from api.billing.quotas import refused, require_items_per_run, require_quota
from api.catalogue_urls import catalogue_url_refused, refuse_unaccepted_site
from api.http.errors import Conflict, NotFound, deleted, found
from api.http.security import new_id
from api.runs.schemas import (
    CreateRunRequest,
    RunOut,
)
from engine import CatalogueUrlRefused, RunNotCancellable, RunStillRunning
from store import QuotaFull, RunRecord, Store, record_fields

# What a monitor's run stores as `max_items` (the column is required): nothing reads it, as
# a monitor's whole history is analysed; answers show null.
MONITOR_RUN_MAX_ITEMS = 0


def run_out(run: RunRecord) -> RunOut:
    return RunOut.model_validate(run_fields(run))


def run_fields(run: RunRecord) -> dict[str, object]:
    """`RunOut`'s fields of `run`, as values `api_json` writes as the model would (a test
    holds the two equal): for answers that list runs without building models."""
    fields = record_fields(run)
    del fields["workspace_id"]
    if run.source == "monitor":
        fields["max_items"] = None
    return fields


async def runs_out(
    store: Store, workspace_id: str, offset: int, limit: int
) -> tuple[list[RunOut], int]:
    """A page of the workspace's runs, newest first (the REST list and the MCP tool answer
    the same), and how many runs there are."""
    runs, total = await store.runs.in_workspace(workspace_id, offset, limit)
    return [run_out(r) for r in runs], total


async def owned_run(store: Store, run_id: str, workspace_id: str) -> RunRecord:
    """The run `run_id` of `workspace_id` (the API caller's, or a page's signed-in person's);
    `NotFound` for another workspace's run or none."""
    return found(await store.runs.get(run_id, workspace_id), "run")


async def checked_url(backend: Backend, url: str) -> str:
    refuse_unaccepted_site(url, backend.settings, doing="analysed")
    try:
        return await backend.engine.market.check_url(url)
    except CatalogueUrlRefused as err:
        raise catalogue_url_refused(url, err.reason, doing="analysed") from err


async def require_run_quota(
    store: Store, workspace_id: str, max_items: int | None
) -> tuple[int, int]:
    """The plan's runs per day (UTC) and, for a catalogue URL's run (`max_items` given, or
    None for the plan's most), items per run; `quota_exceeded`/`plan_required`.

    Returns the listings the run may read: `max_items`, or the plan's `items_per_run` when
    None. A monitor's run passes `MONITOR_RUN_MAX_ITEMS`: items per run bound what one scrape
    reads from the marketplace, while a monitor's history is bounded by the monitor quota and
    is analysed whole, so it is never refused for its size. Then the plan's runs a day, which
    the write checks again with its insert (`at_most`): simultaneous requests all read the
    same count here.
    """
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    runs_today = await store.runs.count_since(workspace_id, today)
    limits = await require_quota(workspace_id, "runs_per_day", runs_today, store=store)
    if max_items == MONITOR_RUN_MAX_ITEMS:
        return max_items, limits.runs_per_day
    items = max_items if max_items is not None else max(1, limits.items_per_run)
    await require_items_per_run(workspace_id, items, store=store)
    return items, limits.runs_per_day


async def create_run_in(backend: Backend, workspace_id: str, data: CreateRunRequest) -> RunRecord:
    """Queue a run in `workspace_id` (the REST view and the MCP `create_analysis` tool).

    Raises `ApiError`s: `NotFound` (monitor of another workspace or none), `BadRequest`
    `url_refused`; the run comes back `queued` and proceeds in the background.
    """
    store = backend.store
    url = None
    if data.monitor_id is not None:
        if await store.monitors.get(data.monitor_id, workspace_id) is None:
            raise NotFound("monitor")
        max_items, runs = await require_run_quota(store, workspace_id, MONITOR_RUN_MAX_ITEMS)
    else:
        assert data.url is not None
        url = await checked_url(backend, data.url)
        max_items, runs = await require_run_quota(store, workspace_id, data.max_items)
    try:
        run = await backend.engine.runs.start(
            run_id=new_id("run"),
            workspace_id=workspace_id,
            label=data.label.strip() if data.label and data.label.strip() else None,
            source="monitor" if data.monitor_id else "url",
            url=url,
            monitor_id=data.monitor_id,
            max_items=max_items,
            include_likely_sales=data.include_likely_sales,
            at_most=runs,
        )
    except QuotaFull as full:  # the day's last run went to a simultaneous request
        raise await refused(workspace_id, full, store=store) from full
    return run


async def delete_run_in(backend: Backend, run: RunRecord) -> None:
    """Delete a finished run (the REST view and the web page); `Conflict` `run_running`."""
    try:
        done = await backend.engine.runs.delete(run)
    except RunStillRunning as err:
        raise Conflict(str(err), code="run_running", suggest=["Cancel the run first"]) from err
    deleted(done, "run")


async def cancel_run_in(backend: Backend, run: RunRecord) -> RunRecord:
    """Cancel a queued or running run; `Conflict` `run_finished` once it has ended."""
    try:
        return await backend.engine.runs.cancel(run)
    except RunNotCancellable as err:
        raise Conflict(str(err), code="run_finished") from err


async def replay_run_in(backend: Backend, run: RunRecord) -> RunRecord:
    """A new run with `run`'s inputs; `Conflict` `source_gone`, quota errors."""
    store = backend.store
    if run.monitor_id is not None and (
        await store.monitors.get(run.monitor_id, run.workspace_id) is None
    ):
        raise Conflict("The monitor of this run no longer exists", code="source_gone")
    max_items, runs = await require_run_quota(
        store, run.workspace_id, MONITOR_RUN_MAX_ITEMS if run.source == "monitor" else run.max_items
    )
    try:
        replay = await backend.engine.runs.start(
            run_id=new_id("run"),
            workspace_id=run.workspace_id,
            label=run.label,
            source=run.source,
            url=run.url,
            monitor_id=run.monitor_id,
            max_items=max_items,
            replay_of=run.id,
            include_likely_sales=run.include_likely_sales,
            at_most=runs,
        )
    except QuotaFull as full:  # the day's last run went to a simultaneous request
        raise await refused(run.workspace_id, full, store=store) from full
    return replay
