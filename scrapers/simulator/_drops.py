"""Sellers' price cuts: a listing that has not sold after a few days is offered cheaper, under
the same id (MARKETPLACE.md: the feed, the item page and the detail API all show a listing's
current asking price). Opt-in (`SimulatorConfig.price_drop_share`).

`price_drop_share` of the listings get a first cut `FIRST_DAYS` after publication, of `CUT` of
their price; `AGAIN_SHARE` of those a second one `AGAIN_DAYS` later. A cut comes only while
the listing is still for sale (before it is sold or deleted, and within the world's horizon),
so a sold listing's last price is the price it sold at. A cut does not hasten the sale: the
listing's life is drawn at its first price, before the cuts.

The draws come from their own generator, seeded from the world's seed, and none is made at a
share of 0: a world without cuts is exactly the world it always was, and a world with them
has the same listings, lives and ids, only some prices lower from some time on.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from decimal import Decimal

DAY = 86_400.0
FIRST_DAYS = (1.0, 6.0)
AGAIN_SHARE = 0.4
AGAIN_DAYS = (3.0, 8.0)
CUT = (0.10, 0.25)
_STEP = Decimal("0.1")  # prices are asked to ten cents, as the world draws them

Drop = tuple[float, Decimal]  # (simulated time, the price from then on)


def draw_drops(
    seed: int, share: float, lives: Sequence[tuple[float, Decimal, float]]
) -> list[tuple[Drop, ...]]:
    """Each listing's cuts, in time order, for listings given as (published, first price, the
    time it stops being for sale or the horizon), in the world's draw order."""
    if share <= 0:
        return [() for _ in lives]
    rng = random.Random(f"price-drops:{seed}")
    found: list[tuple[Drop, ...]] = []
    for born, price, until in lives:
        drops: list[Drop] = []
        if rng.random() < share:
            when = born + rng.uniform(*FIRST_DAYS) * DAY
            price = _cut(rng, price)
            again = rng.random() < AGAIN_SHARE
            later = when + rng.uniform(*AGAIN_DAYS) * DAY
            if when < until and price >= 1:
                drops.append((when, price))
                lower = _cut(rng, price)
                if again and later < until and lower >= 1:
                    drops.append((later, lower))
        found.append(tuple(drops))
    return found


def _cut(rng: random.Random, price: Decimal) -> Decimal:
    """`price` less a drawn `CUT`, to ten cents and at least ten cents lower."""
    lower = (price * Decimal(str(round(1 - rng.uniform(*CUT), 3)))).quantize(_STEP)
    return min(lower, price - _STEP)


def price_at(first: Decimal, drops: tuple[Drop, ...], t: float) -> Decimal:
    """The asking price at `t`: the last cut made by then, else the first price."""
    for when, price in reversed(drops):
        if when <= t:
            return price
    return first


def cuts_until(drops: tuple[Drop, ...], t: float) -> list[list[float | str]]:
    """The cuts made by `t`, as the ground truth states them: [time, price]."""
    return [[when, str(price)] for when, price in drops if when <= t]
