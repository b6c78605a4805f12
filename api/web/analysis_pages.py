"""Analysis pages: list, detail (niches, alerts, the four graphs), import of an export."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from quart import Response

from api.analyses.actions import GRAPH_NAMES, analysis_in_workspace
from api.analyses.choice import depth_of, pin_in, rests_on
from api.analyses.imports import import_from_request
from api.http.errors import ApiError
from api.http.limits import allow_body
from api.market.actions import niche_prices
from api.naming import analysis_title, analysis_titles, run_and_monitor
from api.services import services
from api.web._blueprint import blueprint
from api.web._render import page, see_other
from api.web._words import explain
from api.web.account_pages import signed_in, signed_in_form
from engine.analysis import TRUST_FLOOR, with_sales_basis

GRAPHS = {
    "niche-map": (
        "Niche map",
        "Each niche by how many of its listings are open now, the competition (across, log "
        "scale, sold out at the left edge), and the share of its listings that sold (up): "
        "top left sells out with little competition. The bigger the dot the more sales, the "
        "darker the dearer (grey: no sale yet); top niches are marked by rank, those on one "
        "spot together.",
        "No niche has a sale to place yet: a monitor that runs longer will place them.",
    ),
    "price-bands": (
        "Price bands",
        "For each top niche (by rank), what its listings asked when first seen, sold out or "
        "not, and what they sold for: the bar holds the middle half, the line 80% of them, "
        "the black tick is the median.",
        "No top niche has prices yet.",
    ),
    "time-to-sell": (
        "Time to sell",
        "Share of the top niches' listings still unsold (up) after each number of days since "
        "they were listed (across); the faster a curve falls, the faster the niche sells.",
        "No niche has enough listings seen from the day they were listed and then sold to draw "
        "a curve yet: a monitor that runs longer will.",
    ),
    "market-flow": (
        "Market flow",
        "Listings that appeared, sold and were deleted on each day of the window.",
        "No day of the window recorded a new, sold or deleted listing.",
    ),
}
assert tuple(GRAPHS) == GRAPH_NAMES
NOTICES = {"imported": "Your export was imported and analysed."}
# The trust floor as pages write it: "≥" never ends a line apart from its number.
FLOOR_WORDS = TRUST_FLOOR.words.replace("≥ ", "≥\N{NO-BREAK SPACE}")


def graphs_of(analysis_id: str, result: dict[str, Any]) -> list[dict[str, str | None]]:
    """What a template needs to show the four SVG graphs: a caption that names the axes,
    and, for a graph with nothing to draw, why in words instead of an empty frame."""
    specs = result.get("graphs") if isinstance(result.get("graphs"), dict) else {}
    shown: list[dict[str, str | None]] = []
    for name, (title, caption, empty) in GRAPHS.items():
        spec = specs.get(name) if isinstance(specs, dict) else None
        rows = spec.get("data", {}).get("values") if isinstance(spec, dict) else None
        shown.append(
            {
                "name": name,
                "title": title,
                "caption": caption,
                "empty": empty if isinstance(rows, list) and not rows else None,
                "src": f"/api/analyses/{analysis_id}/graphs/{name}.svg",
            }
        )
    return shown


def graph_key(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The top niches the graphs mark by rank, with their names, for the list under them."""
    top, niches = result.get("top_n"), result.get("niches")
    if not isinstance(niches, list):
        return []
    return [n for n in niches[: top if isinstance(top, int) else 10] if isinstance(n, dict)]


def document(result_json: str) -> dict[str, Any]:
    """A stored result, with its sales basis (derived for one stored before it existed)."""
    return with_sales_basis(json.loads(result_json))


def sales_basis_shown(result: dict[str, Any]) -> dict[str, str] | None:
    """Which sales the analysis counts, for the page to say (`basis` and its sentence,
    `note`): whenever likely sales count, or were recorded and left out; None when every
    sale was confirmed (nothing to say)."""
    basis, note = result.get("sales_basis"), result.get("sales_basis_note")
    counts = result.get("counts") if isinstance(result.get("counts"), dict) else {}
    likely = counts.get("sold_likely") if isinstance(counts, dict) else None
    if not isinstance(basis, str) or not isinstance(note, str):
        return None
    if basis == "confirmed" and not likely:
        return None
    return {"basis": basis, "note": note}


@blueprint.get("/analyses")
async def analyses() -> Response:
    who = await signed_in()
    store = services().store
    items, _ = await store.runs.analyses(who.workspace_id, 0, 50)
    names = await analysis_titles(store, who.workspace_id, items)
    return await page("analyses.html", analyses=items, names=names)


def niche_links(monitor_id: str, niches: list[dict[str, Any]]) -> dict[int, str]:
    """Rank -> the monitor page showing that niche's listings (every state): the parts of
    the niche's key that name something become the page's filters."""
    links = {}
    for n in niches:
        key = n.get("niche") or {}
        query = {"state": "all"}
        if key.get("category_id") is not None:
            query["category"] = str(key["category_id"])
        for part in ("brand", "size", "condition"):
            if key.get(part):
                query[part] = str(key[part])
        links[int(n["rank"])] = f"/monitors/{monitor_id}?{urlencode(query)}#listings"
    return links


@blueprint.get("/analyses/<id:analysis_id>")
async def analysis_detail(analysis_id: str) -> Response:
    who = await signed_in()
    store = services().store
    analysis = await analysis_in_workspace(store, analysis_id, who.workspace_id)
    result = document(analysis.result_json)
    niches = result.get("niches", [])[:25]
    run, monitor = await run_and_monitor(store, analysis)  # the name, and where its listings live
    depth = depth_of(analysis)
    return await page(
        "analysis.html",
        page_title=analysis_title(analysis, run, monitor),
        analysis=analysis,
        monitor=monitor,
        result=result,
        niches=niches,
        niche_links={} if monitor is None else niche_links(monitor.id, niches),
        prices=await niche_prices(store, who.workspace_id, analysis, result, len(niches)),
        alerts=result.get("alerts", [])[:50],
        graphs=graphs_of(analysis.id, result),
        graph_key=graph_key(result),
        sales_basis=sales_basis_shown(result),
        notices=NOTICES,
        pinned=await store.runs.pinned(who.workspace_id) == analysis.id,
        trust={
            "cleared": TRUST_FLOOR.cleared_by(depth),
            "rests_on": rests_on(depth),
            "floor": FLOOR_WORDS,
        },
    )


@blueprint.post("/analyses/<id:analysis_id>/pin")
async def pin_analysis(analysis_id: str) -> Response:
    """Show this analysis on the dashboard until unpinned (`choice.pin_in`: a 404 page for
    an analysis not in the workspace)."""
    who = await signed_in_form()
    await pin_in(services().store, who.workspace_id, analysis_id)
    return see_other("/dashboard?notice=pinned")


@blueprint.post("/analyses/import")
@allow_body("import_max_bytes")
async def import_export() -> Response:
    who = await signed_in_form()
    svc = services()
    try:
        analysis = await import_from_request(svc.store, svc.import_slots, who.workspace_id)
    except ApiError as err:
        items, _ = await svc.store.runs.analyses(who.workspace_id, 0, 50)
        names = await analysis_titles(svc.store, who.workspace_id, items)
        return await page(
            "analyses.html", status=err.status, analyses=items, names=names, error=explain(err)
        )
    return see_other(f"/analyses/{analysis.id}?notice=imported")
