"""The dashboard: top niches and graphs of the latest analysis, recent runs, monitors."""

from __future__ import annotations

from quart import Response

from api.market.actions import niche_prices
from api.naming import analysis_title, run_and_monitor, run_titles
from api.services import services
from api.web._blueprint import blueprint
from api.web._render import page
from api.web.account_pages import signed_in
from api.web.analysis_pages import (
    document,
    graph_key,
    graphs_of,
    niche_links,
    sales_basis_shown,
)

TOP_NICHES = 10
RECENT_RUNS = 8


@blueprint.get("/dashboard")
async def dashboard() -> Response:
    who = await signed_in()
    store = services().store
    latest, _ = await store.runs.analyses(who.workspace_id, 0, 1)
    analysis = latest[0] if latest else None
    result = document(analysis.result_json) if analysis else {}
    niches = result.get("niches", [])[:TOP_NICHES]
    run, monitor = await run_and_monitor(analysis) if analysis else (None, None)
    runs, _ = await store.runs.in_workspace(who.workspace_id, 0, RECENT_RUNS)
    monitors = await store.monitors.in_workspace(who.workspace_id)
    return await page(
        "dashboard.html",
        analysis=analysis,
        analysis_title=analysis_title(analysis, run, monitor) if analysis else None,
        run_names=await run_titles(who.workspace_id, runs),
        niches=niches,
        graphs=graphs_of(analysis.id, result) if analysis else [],
        niche_links=niche_links(monitor.id, niches) if monitor else {},
        prices=await niche_prices(store, who.workspace_id, analysis, result, TOP_NICHES),
        currency=result.get("currency") or "EUR",
        graph_key=graph_key(result),
        sales_basis=sales_basis_shown(result),
        runs=runs,
        monitors=monitors[:6],
    )
