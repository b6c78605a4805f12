"""The dashboard: top niches and graphs of the chosen analysis, recent runs, monitors.

Which analysis is `api/analyses/choice.py`'s: the pinned one, else the most recent above the
trust floor, else the most recent with its caveat. The pin is set from an analysis' page and
lifted here.
"""

from __future__ import annotations

from quart import Response

from api.analyses.choice import dashboard_choice, depth_of, rests_on, title_of, unpin_in
from api.market.actions import niche_prices
from api.naming import run_titles
from api.services import services
from api.web._blueprint import blueprint
from api.web._render import page, see_other
from api.web.account_pages import signed_in, signed_in_form
from api.web.analysis_pages import (
    FLOOR_WORDS,
    document,
    graph_key,
    graphs_of,
    niche_links,
    sales_basis_shown,
)

TOP_NICHES = 10
RECENT_RUNS = 8
# After pinning, the pinned line itself says so (with its Unpin button): no notice above it.
NOTICES = {
    "unpinned": "Unpinned: the dashboard shows the most recent analysis with enough evidence.",
}


@blueprint.get("/dashboard")
async def dashboard() -> Response:
    who = await signed_in()
    store = services().store
    choice, runs = await dashboard_choice(store, who.workspace_id, recent_runs=RECENT_RUNS)
    origin, newer = choice.origin, choice.newer
    analysis = origin.analysis if origin is not None else None
    stored = await store.runs.analysis_result(analysis.id, who.workspace_id) if analysis else None
    result = document(stored) if stored else {}
    niches = result.get("niches", [])[:TOP_NICHES]
    monitor = origin.monitor if origin is not None else None
    monitors = await store.monitors.in_workspace(who.workspace_id)
    return await page(
        "dashboard.html",
        analysis=analysis,
        analysis_title=choice.title,
        choice=choice,
        floor_words=FLOOR_WORDS,
        newer=newer.analysis if newer is not None else None,
        newer_title=title_of(newer) if newer is not None else None,
        newer_rests_on=rests_on(depth_of(newer.analysis)) if newer is not None else None,
        notices=NOTICES,
        run_names=await run_titles(store, who.workspace_id, runs),
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


@blueprint.post("/dashboard/unpin")
async def unpin() -> Response:
    who = await signed_in_form()
    await unpin_in(services().store, who.workspace_id)
    return see_other("/dashboard?notice=unpinned")
