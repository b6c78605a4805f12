"""`/account/settings`: what the workspace pays on top of a purchase (its buying costs), which
every "buy below" price subtracts: on the dashboard's and an analysis' niches, and in alerts.

The same use case as `PUT /api/market/buying-costs` (`api.market.actions`); the margin is typed
as a percentage here and stored as a share.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import ValidationError
from quart import Response, request

from api.market.actions import FORMULA, buying_costs, set_buying_costs
from api.market.schemas import BuyingCostsIn, BuyingCostsOut
from api.services import services
from api.web._blueprint import blueprint
from api.web._render import field_errors, page, see_other
from api.web.account_pages import signed_in, signed_in_form
from engine.pricing import buy_below
from store import BuyingCosts

NOTICES = {"saved": "Saved: buy-below prices use these costs from now on."}
EXAMPLE = Decimal("40.00")  # the resale price the page's worked example starts from


def _form(costs: BuyingCostsOut) -> dict[str, str]:
    return {
        "shipping": f"{costs.shipping:.2f}",
        "packaging": f"{costs.packaging:.2f}",
        "margin": f"{(costs.margin * 100).normalize():f}",
    }


def _example(costs: BuyingCostsOut) -> str:
    """The costs at work on one niche, as alerts word it (the engine's one computation)."""
    chosen = BuyingCosts(costs.shipping, costs.packaging, costs.margin)
    return f"For example, {buy_below(EXAMPLE, chosen, 'EUR').line}."


async def _settings_page(costs: BuyingCostsOut, *, status: int = 200, **context: Any) -> Response:
    context.setdefault("form", _form(costs))
    context.setdefault("errors", {})
    return await page(
        "settings.html", status=status, notices=NOTICES, costs=costs, formula=FORMULA,
        example=_example(costs), **context,
    )  # fmt: skip


@blueprint.get("/account/settings")
async def settings() -> Response:
    who = await signed_in()
    return await _settings_page(await buying_costs(services().store, who.workspace_id))


def _share(percent: str) -> Decimal | str:
    """A percentage as typed ("30", "12.5") as a share (0.3, 0.125); the text itself when it
    is no number, for the validation to refuse."""
    try:
        return Decimal(percent.strip().rstrip("%")) / 100
    except InvalidOperation:
        return percent


@blueprint.get("/settings")  # what the navigation calls the page, typed by hand
@blueprint.get("/account")
async def settings_alias() -> Response:
    return see_other("/account/settings")


@blueprint.post("/account/settings")
async def save_settings() -> Response:
    who = await signed_in_form()
    form = await request.form
    values = {name: form.get(name, "").strip() for name in ("shipping", "packaging", "margin")}
    store = services().store
    try:
        data = BuyingCostsIn.model_validate(values | {"margin": _share(values["margin"])})
    except ValidationError as err:
        costs = await buying_costs(store, who.workspace_id)
        return await _settings_page(costs, status=422, form=values, errors=field_errors(err))
    await set_buying_costs(store, who.workspace_id, data)
    return see_other("/account/settings?notice=saved")
