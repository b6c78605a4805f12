"""The marketplace's own paths on the simulator: catalogues, item details and item pages.

What is served where (see `_app` for the origins): in `2026-09` the JSON catalogue is
`/svc-catalogue/items` (on the API origin when there is one, else on the site); in `legacy` it
is `/api/v2/catalog/items`, which answers 404 code 104 in `2026-09`. The API origin serves no
other marketplace path. JSON paths need a live token (a bearer header or the
`access_token_web` cookie), else 401 `invalid_authentication_token`. The HTML catalogue
(`/catalog...`) and item pages (`/items/<id>-<slug>`, bare ids redirected 301 to the slug URL)
need none. Deleted listings answer 404 (HTML pages, odd ids on the detail API) or a hidden
item (even ids).

The fault knobs that shape answers rather than refuse them are drawn here, from the app's
shared rng and counters: an empty feed, filters ignored, ids as strings, missing fields (JSON
fields dropped, an HTML card broken) and the detail API refusing one request (403 code 106).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from decimal import InvalidOperation
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from .._query import parse_catalogue_url
from ..errors import InvalidCatalogueUrl
from . import _render as render
from . import _render_2026 as render_2026
from ._answer import Answer, access_denied_106, json_answer, not_found_104
from ._config import PROFILE_2026_09
from ._world import FeedFilter

if TYPE_CHECKING:
    from ._app import SimulatorApp

_DETAILS = re.compile(r"^/api/v2/items/(\d+)/details$")
# Any slug: `render.slug` keeps punctuation such as the `&` of "h&m", and the redirect from a
# bare id must land on a page, not on a 404 that reads as "deleted".
_ITEM_PAGE = re.compile(r"^/items/(\d+)(-[^/]*)?$")
_SVC_CATALOGUE = "/svc-catalogue/items"
_LEGACY_CATALOGUE = "/api/v2/catalog/items"


def market_answer(
    app: SimulatorApp,
    path: str,
    query: str,
    headers: dict[str, str],
    cookies: dict[str, str],
    api: bool,
) -> Answer:
    """Marketplace paths by origin and live profile (see the module docstring)."""
    today = app.profile == PROFILE_2026_09
    if path == _SVC_CATALOGUE:
        if not today or (app.api_port is not None and not api):
            return not_found_104()
        if not app.authorised(headers, cookies):
            return _unauthorised()
        return _catalogue_api(app, query)
    if api:  # the API host serves nothing else
        return not_found_104()
    if path.startswith("/api/"):
        if path == _LEGACY_CATALOGUE and today:  # dropped since September 2026
            return not_found_104()
        if not app.authorised(headers, cookies):
            return _unauthorised()
        if path == _LEGACY_CATALOGUE:
            return _catalogue_api(app, query)
        if match := _DETAILS.match(path):
            if app.chance(app.faults.detail_refusal):  # one endpoint refused, not a block
                return access_denied_106()
            return _details(app, int(match.group(1)))
        return json_answer(404, {"code": 404, "message": "Not found"})
    if path == "/catalog" or path.startswith("/catalog/"):
        return _catalogue_html(app, path, query)
    if match := _ITEM_PAGE.match(path):
        return _item_page(app, int(match.group(1)), match.group(2))
    return Answer(404, b"<h1>Not found</h1>", "text/html")


def _catalogue_filter(app: SimulatorApp, feed_filter: FeedFilter) -> FeedFilter | None:
    """The fault knobs that make a block look like success: None for an empty answer, the
    unfiltered feed when filters are ignored, else the filter as asked."""
    if app.take("empty", app.faults.rate_empty):
        return None
    if app.take("ignore_filters", app.faults.rate_ignore_filters):
        return FeedFilter()
    return feed_filter


def _catalogue_api(app: SimulatorApp, query: str) -> Answer:
    """The JSON catalogue in the live profile: legacy `*_ids` filters and `{"code": 0}`, or
    2026-09 `attribute_ids[...]` filters, today's item shape and promoted items."""
    today = app.profile == PROFILE_2026_09
    pairs = parse_qsl(query)
    params = dict(pairs)
    try:
        asked = render_2026.filter_from_pairs(pairs) if today else render.filter_from_params(params)
        page = max(1, int(params.get("page", "1")))
        per_page = min(200, max(1, int(params.get("per_page", "96"))))
    except (ValueError, InvalidOperation):
        return json_answer(400, {"code": 400, "message": "bad parameters"})
    now = app.sim_now()
    feed_filter = _catalogue_filter(app, asked)
    live = [] if feed_filter is None else app.world.live(now, feed_filter)
    items, total, pages = app.world.page_of(live, page, per_page, params.get("order"))
    origin = app.site_origin  # where its photos are: the site, whichever origin answers
    if today:
        share = app.world.config.promoted_share
        key = f"{app.world.config.seed}|{query}|{int(now // render_2026.PROMOTION_PERIOD)}"
        entries = render_2026.with_promoted(live, items, share, key)
        locale = app.world.config.locale
        docs = [render_2026.catalogue_item(app.world, item, now, origin, locale, promoted)
                for item, promoted in entries]  # fmt: skip
    else:
        docs = [render.catalogue_item(app.world, i, now, origin) for i in items]
    _damage(app, docs, render_2026.drop_fields if today else render.drop_fields)
    if today:
        tracking = f"{app.world.config.seed}|{app.served}"
        return json_answer(200, render_2026.catalogue_body(docs, page, per_page, total, pages,
                                                           now, tracking))  # fmt: skip
    return json_answer(200, {
        "items": docs,
        "pagination": {"current_page": page, "total_pages": pages, "total_entries": total,
                       "per_page": per_page},
        "code": 0,
    })  # fmt: skip


def _damage(
    app: SimulatorApp,
    docs: list[dict[str, Any]],
    drop: Callable[[dict[str, Any], random.Random], dict[str, Any]],
) -> None:
    """The drifting-JSON faults: ids as strings, missing fields (in place)."""
    if app.faults.ids_as_strings > 0:
        for doc in docs:
            if app.rng.random() < app.faults.ids_as_strings:
                doc["id"] = str(doc["id"])
    if app.faults.rate_missing_fields > 0:
        for index, doc in enumerate(docs):
            if app.rng.random() < app.faults.rate_missing_fields:
                docs[index] = drop(doc, app.rng)


def _details(app: SimulatorApp, item_id: int) -> Answer:
    now = app.sim_now()
    item = app.world.listing(item_id, now)
    state = item.state_at(now) if item is not None else None
    # Deleted listings answer 404 (odd ids) or a hidden item (even ids): both happen for real.
    if item is None or state is None or (state == "deleted" and item_id % 2):
        return json_answer(404, {"code": 404, "message": "Item not found"})
    return json_answer(200, {"item": render.item_detail(app.world, item, now, app.request_origin),
                       "code": 0})  # fmt: skip


def _catalogue_html(app: SimulatorApp, path: str, query: str) -> Answer:
    try:
        parsed = parse_catalogue_url(f"http://sim{path}?{query}")
    except InvalidCatalogueUrl as err:
        return Answer(400, f"<h1>{err.reason}</h1>".encode(), "text/html")
    feed_filter = FeedFilter(
        catalog_ids=frozenset(parsed.catalog_ids), brand_ids=frozenset(parsed.brand_ids),
        size_ids=frozenset(parsed.size_ids), status_ids=frozenset(parsed.status_ids),
        price_from=parsed.price_from, price_to=parsed.price_to,
        search_text=parsed.search_text,
    )  # fmt: skip
    page = dict(parse_qsl(query)).get("page", "1")
    now = app.sim_now()
    served = _catalogue_filter(app, feed_filter)
    live = [] if served is None else app.world.live(now, served)
    items, _, _ = app.world.page_of(
        live, max(1, int(page) if page.isascii() and page.isdigit() else 1), 96, parsed.order
    )
    layout = app.world.config.html_layout
    if layout not in ("A", "B"):
        layout = "AB"[app.served % 2]
    broken = None
    rate = app.faults.rate_missing_fields
    if items and rate > 0 and app.rng.random() < rate:
        broken = app.rng.randrange(len(items))
    page_html = render.catalogue_html(app.world, items, now, layout, broken)
    return Answer(200, page_html.encode(), "text/html; charset=utf-8")


def _item_page(app: SimulatorApp, item_id: int, slug_part: str | None) -> Answer:
    now = app.sim_now()
    item = app.world.listing(item_id, now)
    state = item.state_at(now) if item is not None else None
    if item is None or state is None or state == "deleted":
        return Answer(404, b"<h1>This item is gone</h1>", "text/html")
    if not slug_part:  # the marketplace redirects bare ids to the canonical slug URL
        return Answer(301, b"", "text/html",
                       [("location", f"/items/{item.id}-{render.slug(item)}")])  # fmt: skip
    if app.profile == PROFILE_2026_09:
        config = app.world.config
        page = render_2026.item_page(app.world, item, state, app.request_origin, config.locale,
                                     config.item_page_padding)  # fmt: skip
        return Answer(200, page, "text/html; charset=utf-8")
    page_html = render.item_page(app.world, item, now, app.request_origin)
    return Answer(200, page_html.encode(), "text/html; charset=utf-8")


def _unauthorised() -> Answer:
    return json_answer(401, {"code": 100, "message_code": "invalid_authentication_token",
                             "message": "Token expired or invalid"})  # fmt: skip
