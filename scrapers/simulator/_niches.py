"""What the simulated market is, as against who lists what in it: each (category, brand)
niche's kind (hot, saturated or normal) and its median price.

Drawn from a seed of their own when `SimulatorConfig.niche_seed` names one, so that several
worlds (the demo's sample month, its live market and the markets renewed after it) are one
market drawn several times: the same hot niches at the same price levels, whatever listings
each world draws.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from decimal import Decimal

from ._catalogue import CATALOGUE
from ._config import SimulatorConfig

HOT, SATURATED, NORMAL = "hot", "saturated", "normal"


@dataclass(frozen=True, slots=True)
class Niche:
    category_id: int
    brand_id: int
    kind: str
    median_price: Decimal


def _plant(rng: random.Random, n_hot: int, n_saturated: int) -> dict[tuple[int, int], str]:
    """Which (category, brand) niches are hot and which saturated: dealt round the categories
    (in a drawn order, each category's brands shuffled), so that every category gets a hot
    niche before any gets a second and the saturated ones go on from there. A market whose hot
    niches all sit in one category reads as a bug, not as a market."""
    hands = {c.id: [(c.id, b) for b in c.brands] for c in CATALOGUE}
    for hand in hands.values():
        rng.shuffle(hand)
    order = list(hands)
    rng.shuffle(order)
    dealt: list[tuple[int, int]] = []
    while len(dealt) < n_hot + n_saturated and any(hands.values()):
        dealt += [hands[c].pop() for c in order if hands[c]]
    kinds = [HOT] * n_hot + [SATURATED] * n_saturated
    return dict(zip(dealt, kinds, strict=False))


def draw_niches(rng: random.Random, config: SimulatorConfig) -> dict[tuple[int, int], Niche]:
    """Every (category, brand) niche: its kind (`_plant`) and its median price, drawn within
    its category's price range (`rng` is advanced by exactly these draws)."""
    kinds = _plant(rng, config.n_hot, config.n_saturated)
    niches: dict[tuple[int, int], Niche] = {}
    for category in CATALOGUE:
        low, high = category.prices
        for brand in category.brands:
            key = (category.id, brand)
            median = Decimal(rng.randrange(low, high))
            niches[key] = Niche(category.id, brand, kinds.get(key, NORMAL), median)
    return niches
