"""`get_price_book`: what a niche of a site sells for and what to pay for it (what
`GET /api/market/price-book` answers)."""

from __future__ import annotations

from pydantic import ConfigDict

from api.http.auth import Principal
from api.market.actions import price_book
from api.market.schemas import PriceBookOut, PriceBookQuery
from api.mcp._registry import READ_ONLY, Tool
from api.services import services


class GetPriceBookArguments(PriceBookQuery):
    model_config = ConfigDict(extra="forbid", title="GetPriceBookArguments")


async def get_price_book(principal: Principal, arguments: GetPriceBookArguments) -> PriceBookOut:
    # A niche none of the workspace's own listings fall in is `not_found`, like an empty one.
    return await price_book(services().store, principal.workspace_id, arguments)


TOOL = Tool(
    name="get_price_book",
    title="Get a niche's price book",
    description=(
        "What one niche (category, brand, size, condition) of a marketplace site sells for, "
        "from every sale the service recorded on that site: median sold price and its middle "
        "half, median days to sell, how many sales, confirmed and likely (inferred from "
        "absence, a guess) apart, how old they are, at each back-off level, which level and "
        "evidence the price rests on (`explanation` says so in a sentence: pass it on), and "
        "`buy_below`, the most to pay after the workspace's margin, shipping and packaging. "
        "`site` is a catalogue URL's origin (https://www.vinted.fr); only niches that a "
        "listing of the workspace's own monitors falls in are answered, any other is an "
        "error result with code `not_found`."
    ),
    scope="read",
    input_model=GetPriceBookArguments,
    output_model=PriceBookOut,
    annotations=READ_ONLY,
    handler=get_price_book,
)
