"""Monitor pages: list and start, detail with counts and listings, pause/resume, delete."""

from __future__ import annotations

from urllib.parse import urlencode

from pydantic import ValidationError
from quart import Response, request

from api.http.errors import ApiError, found
from api.http.schemas import page_count
from api.monitors.actions import (
    counted,
    delete_monitor_in,
    one_monitor_out,
    pause_monitor_in,
    resume_monitor_in,
    start_monitor_in,
)
from api.monitors.actions import owned_monitor as owned
from api.monitors.schemas import MAX_CATEGORY_ID, StartMonitorRequest
from api.naming import analysis_titles, catalogue_name
from api.notifications.actions import alert_summary
from api.services import services
from api.web._blueprint import blueprint
from api.web._clocks import apart
from api.web._render import confirm_delete, page, requested_page, see_other
from api.web._words import explain
from api.web.account_pages import signed_in, signed_in_form, signed_in_record
from store import LISTING_STATES, ListingFilter, ListingRecord

PAGE_SIZE = 25
# How a listing's current state was established, as the listings table says it.
EVIDENCE_WORDS = {
    "detail_api": "confirmed by the marketplace",
    "item_page": "confirmed on its page",
    "absence": "likely: gone from the feed",
}
STATES = ("open", "reserved", "sold", "deleted", "all")
NOTICES = {
    "started": "Your monitor is starting: the first look at the catalogue takes a moment.",
    "paused": "The monitor is paused. Its data is kept.",
    "resumed": "The monitor is checking the catalogue again.",
    "deleted": "The monitor and all its data were deleted.",
}
INTERVALS = (
    (60, "Every minute"),
    (300, "Every 5 minutes"),
    (900, "Every 15 minutes"),
    (3600, "Every hour"),
    (21600, "Every 6 hours"),
    (86400, "Every day"),
)


async def _list_page(workspace_id: str, *, status: int = 200, **context: object) -> Response:
    store = services().store
    monitors = await store.monitors.in_workspace(workspace_id)
    analyses, _ = await store.runs.analyses(workspace_id, 0, 20)
    context.setdefault("form", {"url": "", "label": "", "interval": "", "analysis_id": ""})
    context.setdefault("errors", {})
    return await page(
        "monitors.html",
        status=status,
        monitors=await counted(store, monitors),
        analyses=analyses,
        analysis_names=await analysis_titles(store, workspace_id, analyses),
        intervals=INTERVALS,
        notices=NOTICES,
        **context,
    )


@blueprint.get("/monitors")
async def monitors() -> Response:
    who = await signed_in()
    form = {"url": "", "label": "", "interval": "", "analysis_id": request.args.get("analysis", "")}
    return await _list_page(who.workspace_id, form=form)


@blueprint.post("/monitors")
async def start_monitor() -> Response:
    who = await signed_in_form()
    form = await request.form
    values = {k: form.get(k, "").strip() for k in ("url", "label", "interval", "analysis_id")}
    source = form.get("source", "url")
    values["source"] = source  # a form shown again keeps the source that was chosen
    errors: dict[str, str] = {}
    typed = values["interval"]
    interval = int(typed) if typed.isascii() and typed.isdigit() else None
    if values["interval"] and interval is None:
        errors["interval"] = "Enter a number of seconds, such as 300."
    if source == "analysis" and not values["analysis_id"]:
        errors["analysis_id"] = "Pick the analysis whose catalogue to follow."
    if source != "analysis" and not values["url"]:
        errors["url"] = "Paste the address of a catalogue page."
    if errors:
        return await _list_page(who.workspace_id, status=422, form=values, errors=errors)
    try:
        data = StartMonitorRequest(
            url=values["url"] if source != "analysis" else None,
            analysis_id=values["analysis_id"] if source == "analysis" else None,
            label=values["label"] or None,
            interval_seconds=interval,
        )
    except ValidationError:
        errors["form"] = "Check the fields: the label is at most 200 characters and the "
        errors["form"] += "interval between 1 second and 7 days."
        return await _list_page(who.workspace_id, status=422, form=values, errors=errors)
    try:
        monitor = await start_monitor_in(services().backend, who.workspace_id, data)
    except ApiError as err:
        return await _list_page(
            who.workspace_id, status=err.status, form=values, error=explain(err)
        )
    return see_other(f"/monitors/{monitor.id}?notice=started")


NICHE_ARGS = ("category", "brand", "size", "condition")


def niche_query() -> dict[str, str]:
    """The niche an analysis' link asks for (`?category=&brand=&size=&condition=`), as given;
    a value no listing can hold (NUL, which PostgreSQL refuses to bind) is ignored."""
    return {k: v for k in NICHE_ARGS if (v := request.args.get(k, "").strip()) and "\x00" not in v}


def niche_filter(states: tuple[str, ...], query: dict[str, str]) -> ListingFilter:
    """The listings of the niche `query` names; a value that is not one (a category that is
    not a stored id, an over-long text) is ignored: a page link never fails."""
    args = {k: v[:200] for k, v in query.items()}
    category = args.get("category", "")
    return ListingFilter(
        states=states,
        category_id=int(category)
        if category.isascii() and category.isdigit() and int(category[:12]) <= MAX_CATEGORY_ID
        else None,
        brand=args.get("brand"),
        size=args.get("size"),
        condition=args.get("condition"),
    )


def _niche_words(query: dict[str, str], shown: list[ListingRecord]) -> str:
    """The niche being shown, in words: its category by name where a listing names it."""
    words = dict(query)
    if "category" in words:
        named = next((x.category_name for x in shown if x.category_name), None)
        words["category"] = named or f"category {words['category']}"
    return " · ".join(words.values())


@blueprint.get("/monitors/<id:monitor_id>")
async def monitor_detail(monitor_id: str) -> Response:
    svc = services()
    who = await signed_in()
    store = svc.store
    monitor = await owned(store, monitor_id, who.workspace_id)
    state = request.args.get("state", "open")
    if state not in STATES:
        state = "open"
    current = requested_page()
    states = LISTING_STATES if state == "all" else (state,)
    asked = niche_query()
    niche = niche_filter(states, asked)
    listings = found(  # None: deleted since `owned` found it
        await store.monitors.filtered_listings(monitor.id, niche, current, PAGE_SIZE)
        if niche.narrows
        else await store.monitors.listings(monitor.id, states, current, PAGE_SIZE),
        "monitor",
    )
    shown = await one_monitor_out(svc.backend, monitor)
    market_at, ours = shown.last_check_market_at, shown.last_poll_at
    return await page(
        "monitor.html",
        monitor=shown,
        catalogue=catalogue_name(monitor.url),  # the URL in words; the link holds the URL
        now=store.clock(),  # relative check times ("12 s ago"), on the checks' clock
        market_apart=apart(market_at, ours) if market_at and ours else None,
        listings=listings.listings,
        total=listings.total,
        filter_state=state,
        niche_words=_niche_words(asked, listings.listings) if niche.narrows else None,
        niche_query=urlencode(asked),
        states=STATES,
        current=current,
        pages=page_count(listings.total, PAGE_SIZE),
        evidence_words=EVIDENCE_WORDS,
        notices=NOTICES,
        alerts=await alert_summary(store, who.workspace_id, monitor.id),
    )


@blueprint.post("/monitors/<id:monitor_id>/pause")
async def pause_monitor(monitor_id: str) -> Response:
    await pause_monitor_in(services().backend, await signed_in_record(owned, monitor_id))
    return see_other(f"/monitors/{monitor_id}?notice=paused")


@blueprint.post("/monitors/<id:monitor_id>/resume")
async def resume_monitor(monitor_id: str) -> Response:
    await resume_monitor_in(services().backend, await signed_in_record(owned, monitor_id))
    return see_other(f"/monitors/{monitor_id}?notice=resumed")


@blueprint.get("/monitors/<id:monitor_id>/delete")
async def confirm_delete_monitor(monitor_id: str) -> Response:
    monitor = await signed_in_record(owned, monitor_id)
    return await confirm_delete(
        f"/monitors/{monitor.id}",
        title=f"Delete the monitor “{monitor.label or monitor.url}”?",
        message="This stops it and deletes every listing, change and check it recorded. "
        "Analyses made from it are kept. This cannot be undone.",
        button="Delete monitor",
    )


@blueprint.post("/monitors/<id:monitor_id>/delete")
async def delete_monitor(monitor_id: str) -> Response:
    await delete_monitor_in(services().backend, await signed_in_record(owned, monitor_id))
    return see_other("/monitors?notice=deleted")
