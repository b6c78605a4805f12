"""What to pay: the most a workspace can pay for a listing of a niche and still keep its
margin, from the price book's typical sold price and the workspace's buying costs.

    buy below = typical sold price x (1 - margin share) - shipping - packaging

Shipping and packaging are per item, in the currency of the niche's sales; the margin is the
share of the resale price kept. Example: €43.00, 30% margin (€12.90), €4.00 shipping, €0.50
packaging -> buy below €25.60. Nothing is left to pay (a cheap niche, high costs): None, and
the line says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from store import BuyingCosts

from ._words import money

CENT = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class BuyBelow:
    price: Decimal | None  # None: no price leaves the margin
    sold_for: Decimal
    margin: Decimal  # the amount kept, from the share
    costs: BuyingCosts
    line: str  # the computation in one line

    def to_json(self) -> dict[str, Any]:
        return {
            "price": None if self.price is None else f"{self.price:.2f}",
            "sold_for": f"{self.sold_for:.2f}",
            "margin": f"{self.margin:.2f}",
            "margin_share": float(self.costs.margin),
            "shipping": f"{self.costs.shipping:.2f}",
            "packaging": f"{self.costs.packaging:.2f}",
            "line": self.line,
        }


def buy_below(typical: Decimal, costs: BuyingCosts, currency: str | None) -> BuyBelow:
    """The buy-below price of a niche that typically sells for `typical` (module doc)."""
    margin = (typical * costs.margin).quantize(CENT, rounding=ROUND_HALF_UP)
    left = typical - margin - costs.shipping - costs.packaging
    price = left.quantize(CENT) if left > 0 else None

    def m(amount: Decimal) -> str:
        return money(amount, currency)

    parts = (
        f"{m(typical)} it sells for, less {float(costs.margin):.0%} margin ({m(margin)}), "
        f"{m(costs.shipping)} shipping and {m(costs.packaging)} packaging"
    )
    line = (
        f"buy below {m(price)}: the {parts}"
        if price is not None
        else f"no price leaves your margin: the {parts} leave nothing"
    )
    return BuyBelow(price, typical, margin, costs, line)
