"""`/api/market/*` and `/api/analyses/{id}/price-book`: thin views over `actions`.

Every read is scoped to the caller's workspace: a niche none of its monitors' listings fall
in, or another workspace's analysis, is a 404 like one that does not exist. Tokens need
`read` for GET and `write` for PUT (`api/http/auth.py`).
"""

from __future__ import annotations

import json

import trio
from quart import Blueprint
from quart_schema import validate_querystring, validate_request, validate_response

from api.http.auth import current_principal
from api.http.errors import found
from api.http.openapi import operation
from api.market import actions
from api.market.schemas import (
    AnalysisPriceBookOut,
    BuyingCostsIn,
    BuyingCostsOut,
    PriceBookOut,
    PriceBookQuery,
)
from api.services import services

blueprint = Blueprint("market", __name__)


@blueprint.get("/api/market/price-book")
@operation("getPriceBook")
@validate_querystring(PriceBookQuery)
@validate_response(PriceBookOut, 200)
async def get_price_book(query_args: PriceBookQuery) -> PriceBookOut:
    """What one niche of a site sells for, from every sale the service recorded on that
    site: sold prices (median and middle half), days to sell, how many sales, confirmed and
    likely apart, how old they are, at each back-off level (the niche, its brand in the
    category, the category), which of them a price rests on, and what to pay ("buy below",
    from the workspace's buying costs). Over each level's last 50 confirmed and 50 likely
    sales of the last 90 days.

    Only a niche that a listing of your own monitors of that site falls in is answered; any
    other is a 404, whatever the market holds.
    """
    workspace_id = current_principal().workspace_id
    return await actions.price_book(services().store, workspace_id, query_args)


@blueprint.get("/api/analyses/<id:analysis_id>/price-book")
@operation("getAnalysisPriceBook")
@validate_response(AnalysisPriceBookOut, 200)
async def get_analysis_price_book(analysis_id: str) -> AnalysisPriceBookOut:
    """The price book and buy-below price of an analysis' best 20 niches, on the site its
    listings came from. A niche of an imported analysis is answered only when your own
    monitors hold a listing of it (`book` null otherwise)."""
    store = services().store
    workspace_id = current_principal().workspace_id
    origin = found(
        await store.runs.analysis_origin(analysis_id, workspace_id, with_result=True), "analysis"
    )
    result = await trio.to_thread.run_sync(json.loads, origin.analysis.result_json)
    return await actions.analysis_price_book(store, origin, result)


@blueprint.get("/api/market/buying-costs")
@operation("getBuyingCosts")
@validate_response(BuyingCostsOut, 200)
async def get_buying_costs() -> BuyingCostsOut:
    """What the workspace pays on top of a purchase (shipping and packaging per item) and the
    share of the resale price it keeps as margin: what every "buy below" price subtracts.
    Defaults until changed: 4.00 shipping, 0.50 packaging, 30% margin."""
    workspace_id = current_principal().workspace_id
    return await actions.buying_costs(services().store, workspace_id)


@blueprint.put("/api/market/buying-costs")
@operation("setBuyingCosts")
@validate_request(BuyingCostsIn)
@validate_response(BuyingCostsOut, 200)
async def set_buying_costs(data: BuyingCostsIn) -> BuyingCostsOut:
    """Replace the workspace's buying costs; alerts queued from now on and every page use
    them."""
    workspace_id = current_principal().workspace_id
    return await actions.set_buying_costs(services().store, workspace_id, data)
