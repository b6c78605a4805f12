"""What a deal is, once, for every part of the service that names one: an asking price at
most `ratio` (70% by default) of what the listing's niche typically sells for, that typical
price resting on at least `DEAL_MIN_SALES` sales. A poll's alerts judge it against the price
book (`engine.pricing`), an analysis against the niches of its own window (a whole column at
once: `deal_mask`); the rule is the same expression (`_deal`). Here, in the analysis package,
because both need it and the price book already builds on the analysis (its niche labels)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

DEAL_RATIO = 0.7  # a rule's `deal_ratio` when it names none
DEAL_MIN_SALES = 3  # a typical price of fewer sales says too little to call anything a deal


def _deal(price: Any, reference: Any, sales: Any, ratio: float, min_sales: int) -> Any:
    """The definition, on numbers or on numpy columns alike."""
    # "At most", to a hair: 0.7 x 24.00 is 16.799999... in floating point, and 16.80 is a deal.
    return (sales >= min_sales) & (reference > 0) & (price - ratio * reference <= 1e-9)


def is_deal(
    price: float | None,
    reference: float | None,
    sales: int,
    ratio: float = DEAL_RATIO,
    min_sales: int = DEAL_MIN_SALES,
) -> bool:
    """Whether `price` is a deal against a typical sold price `reference` resting on `sales`
    sales (no price or no reference: never)."""
    if price is None or reference is None:
        return False
    return bool(_deal(price, reference, sales, ratio, min_sales))


def deal_mask(
    price: npt.NDArray[np.float64],
    reference: npt.NDArray[np.float64],
    sales: npt.NDArray[np.int64],
    ratio: float = DEAL_RATIO,
    min_sales: int = DEAL_MIN_SALES,
) -> npt.NDArray[np.bool_]:
    """`is_deal` element-wise (NaN prices or references are never deals)."""
    with np.errstate(invalid="ignore"):
        found: npt.NDArray[np.bool_] = _deal(
            price, np.nan_to_num(reference), sales, ratio, min_sales
        )
    return found & ~np.isnan(price)


def discount(price: float, reference: float) -> float:
    """How far under `reference` a price asks: 0.45 for 45% under (negative: over)."""
    return 1.0 - price / reference
