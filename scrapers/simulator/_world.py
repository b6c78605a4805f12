"""The simulator's world: pure and deterministic (a seed in, every listing's life out).

What is sold (categories, their sizes and brands, prices) is `_catalogue`'s; which niches are
hot or saturated and at what price is `_niches`' (drawn from the seed, or from a niche seed of
its own); each listing and its life are drawn here, and its price cuts in `_drops`, all when
the world is built, so the state at any simulated time is a lookup: the same seeds give the
same answers whatever order requests arrive in.

Listings are kept in publication order (`born`), and every newest-first feed is that order
reversed, never id order: a listing's id may have been allotted days before its publication,
when its draft was made (`SimulatorConfig.draft_share`, `_ids`).
"""

from __future__ import annotations

import bisect
import math
import random
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, replace
from decimal import Decimal

from ._catalogue import (
    BRANDS,
    CATALOGUE,
    CATEGORIES,
    CATEGORY_PATHS,
    CONDITION_WEIGHTS,
    CONDITIONS,
    SIZES,
)
from ._config import SimulatorConfig
from ._drops import Drop, cuts_until, draw_drops, price_at
from ._ids import allot_ids
from ._niches import HOT, NORMAL, SATURATED, Niche, draw_niches

DAY = 86_400.0
_SATURATED_SPEED = 0.3  # of an ordinary niche's (hot ones: `SimulatorConfig.hot_speed`)
_SHARE = {HOT: 1.0, SATURATED: 4.0, NORMAL: 1.0}  # saturated niches are crowded
_STALE_ASK = (1.2, 1.6)  # stale stock asks this much more than it would otherwise
_STALE_SPEED = 0.1  # and sells ten times slower (its seller deletes it first, mostly)
DELETE_PER_DAY = 1 / 45
_CONDITION_IDS = tuple(c for c, _ in CONDITIONS)
_SIZE_SYSTEMS = {c.id: ([s for s, _ in c.sizes], [w for _, w in c.sizes]) for c in CATALOGUE}


def _draw_size(rng: random.Random, category_id: int) -> int | None:
    """A size of the category's own system (weighted as people list them), None without one.
    No draw is made for a category without sizes."""
    sizes, weights = _SIZE_SYSTEMS[category_id]
    return rng.choices(sizes, weights)[0] if sizes else None


@dataclass(frozen=True, slots=True)
class _Draft:
    key: tuple[int, int]
    price: Decimal
    seller: int
    born: float
    events: tuple[tuple[float, str], ...]
    parent: int
    index: int
    size: int | None
    status: int
    fav: float
    views: float


@dataclass(frozen=True, slots=True)
class SimListing:
    """One listing and its whole life: `events` are (simulated time, state), the first `open`.
    `born` is its publication; `drafted_at` when its id was allotted, if that was earlier (a
    draft made days before), else None. `price` is its first asking price, `drops` the
    seller's later cuts (time, price from then on; `_drops`): its price at a time is
    `price_at`, and `World.live` and `World.listing` show it at that price."""

    id: int
    title: str
    category_id: int
    brand_id: int
    size_id: int | None  # None in categories without sizes (bags, games)
    status_id: int
    price: Decimal
    seller_id: int
    seller_login: str
    business: bool
    born: float
    events: tuple[tuple[float, str], ...]
    fav_per_day: float
    views_per_day: float
    relist_of: int | None = None
    drafted_at: float | None = None
    drops: tuple[Drop, ...] = ()

    def state_at(self, t: float) -> str | None:
        """None before it was born."""
        # A life has two to five events and every feed asks each live listing: a scan from
        # the end beats building a list to bisect.
        for when, state in reversed(self.events):
            if when <= t:
                return state
        return None

    def history_until(self, t: float) -> list[tuple[float, str]]:
        return [e for e in self.events if e[0] <= t]

    def price_at(self, t: float) -> Decimal:
        return price_at(self.price, self.drops, t) if self.drops else self.price

    def priced_at(self, t: float) -> SimListing:
        """This listing as it is shown at `t`: `price` its price then."""
        return replace(self, price=self.price_at(t)) if self.drops else self

    def favourites_at(self, t: float) -> int:
        return int(max(0.0, t - self.born) / DAY * self.fav_per_day)

    def views_at(self, t: float) -> int:
        return int(max(0.0, t - self.born) / DAY * self.views_per_day)


@dataclass(frozen=True, slots=True)
class FeedFilter:
    catalog_ids: frozenset[int] = frozenset()
    brand_ids: frozenset[int] = frozenset()
    size_ids: frozenset[int] = frozenset()
    status_ids: frozenset[int] = frozenset()
    price_from: Decimal | None = None
    price_to: Decimal | None = None
    search_text: str | None = None

    def accepts(self, item: SimListing) -> bool:
        return (
            (not self.catalog_ids or item.category_id in self.catalog_ids)
            and (not self.brand_ids or item.brand_id in self.brand_ids)
            and (not self.size_ids or item.size_id in self.size_ids)
            and (not self.status_ids or item.status_id in self.status_ids)
            and (self.price_from is None or item.price >= self.price_from)
            and (self.price_to is None or item.price <= self.price_to)
            and (not self.search_text or self.search_text.lower() in item.title.lower())
        )


class World:
    """Categories, brands, niches and listings drawn from `config.seed`."""

    def __init__(self, config: SimulatorConfig) -> None:
        self.config = config
        rng = random.Random(config.seed)
        self.categories = dict(CATEGORIES)
        self.category_paths = dict(CATEGORY_PATHS)
        self.brands = dict(BRANDS)
        self.sizes = dict(SIZES)
        self.conditions = dict(CONDITIONS)
        # A niche seed of its own draws the niches apart; else they come first in the seed's
        # draw, as they always did (a seed's world is the same with or without the knob).
        own = config.niche_seed is not None and config.niche_seed != config.seed
        self.niches = draw_niches(random.Random(config.niche_seed) if own else rng, config)
        self.listings = self._generate(rng)
        self.by_id = {item.id: item for item in self.listings}
        self._born = [item.born for item in self.listings]

    # -- generation ----------------------------------------------------------------------------

    def _generate(self, rng: random.Random) -> list[SimListing]:
        end = self.config.start + self.config.horizon_days * DAY
        drafts = self._drafts(rng, self._births(rng, end), end)
        drafts.sort(key=lambda d: (d.born, d.index))  # publication order: the feeds' order
        c = self.config
        ids = allot_ids([(d.index, d.born) for d in drafts], c.seed, c.draft_share, c.start,
                        first_id=c.first_id)  # fmt: skip
        in_draw_order = sorted(drafts, key=lambda d: d.index)
        # For sale until sold or deleted (a life's last event), else until the horizon.
        lives = [(d.born, d.price, d.events[-1][0] if d.events[-1][1] in ("sold", "deleted")
                  else end) for d in in_draw_order]  # fmt: skip
        drops = draw_drops(c.seed, c.price_drop_share, lives)
        return [self._listing(d, ids, drops[d.index]) for d in drafts]

    def _births(self, rng: random.Random, end: float) -> list[float]:
        """`n_listings` born in the 20 days before the start, then a Poisson stream of
        `arrivals_per_day` until `end`."""
        c = self.config
        births = [c.start - rng.uniform(0, 20 * DAY) for _ in range(c.n_listings)]
        t = c.start
        while c.arrivals_per_day > 0:
            t += rng.expovariate(c.arrivals_per_day / DAY)
            if t >= end:
                break
            births.append(t)
        return births

    def _drafts(self, rng: random.Random, births: list[float], end: float) -> list[_Draft]:
        """One listing per birth (niche, price, seller, life drawn in this order), and the
        cheaper relists of deleted ones, in the order drawn (`index`)."""
        niche_keys = list(self.niches)
        weights = [_SHARE[self.niches[k].kind] for k in niche_keys]
        drafts: list[_Draft] = []
        queue: list[tuple[float, tuple[int, int] | None, Decimal | None, int | None, int]] = [
            (born, None, None, None, -1) for born in births
        ]
        while queue:
            born, key, price, seller, parent = queue.pop()
            if key is None:
                key = rng.choices(niche_keys, weights)[0]
            niche = self.niches[key]
            stale = False  # a relist is priced to sell
            if price is None:
                factor = math.exp(rng.gauss(0, 0.35))
                # No draw at the default share of 0: worlds without stale stock stay as drawn.
                if self.config.stale_share > 0 and rng.random() < self.config.stale_share:
                    stale, factor = True, factor * rng.uniform(*_STALE_ASK)
                price = niche.median_price * Decimal(str(round(factor, 2)))
                price = price.quantize(Decimal("0.5"))
                price = max(price, Decimal("1.0"))
            if seller is None:
                seller = rng.randrange(1_000_000, 9_999_999)
            events, deleted_at = self._life(rng, born, end, niche, price, stale)
            drafts.append(
                _Draft(
                    key=key, price=price, seller=seller, born=born, events=tuple(events),
                    parent=parent, index=len(drafts), size=_draw_size(rng, key[0]),
                    status=rng.choices(_CONDITION_IDS, CONDITION_WEIGHTS)[0],
                    fav=rng.uniform(0.5, 3.0) * (2.5 if niche.kind == HOT else 1.0),
                    views=rng.uniform(5, 30),
                )
            )  # fmt: skip
            if deleted_at is not None and rng.random() < 0.3:  # the seller relists it cheaper
                relist_born = deleted_at + rng.uniform(0.05, 1.0) * DAY
                if relist_born < end:
                    cheaper = (price * Decimal("0.9")).quantize(Decimal("0.5"))
                    queue.append((relist_born, key, cheaper, seller, len(drafts) - 1))
        return drafts

    def _listing(
        self, d: _Draft, ids: dict[int, tuple[int, float | None]], drops: tuple[Drop, ...]
    ) -> SimListing:
        """The listing `d` becomes, under its id (`ids`: draw index to id and draft time),
        with its price `drops`."""
        cat, brand = d.key
        item_id, drafted_at = ids[d.index]
        return SimListing(
            id=item_id,
            title=f"{self.brands[brand]} {self.categories[cat].lower()} {item_id % 997}",
            category_id=cat,
            brand_id=brand,
            size_id=d.size,
            status_id=d.status,
            price=d.price,
            seller_id=d.seller,
            seller_login=f"seller{d.seller}",
            business=d.seller % 10 == 0,
            born=d.born,
            events=d.events,
            fav_per_day=d.fav,
            views_per_day=d.views,
            relist_of=ids[d.parent][0] if d.parent != -1 else None,
            drafted_at=drafted_at,
            drops=drops,
        )

    def _life(
        self, rng: random.Random, born: float, end: float, niche: Niche, price: Decimal,
        stale: bool = False,
    ) -> tuple[list[tuple[float, str]], float | None]:  # fmt: skip
        """Draw one listing's events. Cheaper than the niche median sells faster; stale
        stock (`SimulatorConfig.stale_share`) hardly sells at all."""
        ratio = float(niche.median_price / price)
        c = self.config
        speed = {HOT: c.hot_speed, SATURATED: _SATURATED_SPEED}.get(niche.kind, 1.0)
        speed *= _STALE_SPEED if stale else 1.0
        hazard = speed / c.sale_days * min(4.0, max(0.25, ratio**2))
        sale = born + rng.expovariate(hazard) * DAY
        delete = born + rng.expovariate(DELETE_PER_DAY) * DAY
        events: list[tuple[float, str]] = [(born, "open")]
        finish = min(sale, delete)
        if rng.random() < 0.15:  # a reservation that lapses back to open
            start = born + rng.uniform(0, 1) * (finish - born)
            length = rng.uniform(0.2, 1.0) * DAY
            if start + length + 0.05 * DAY < finish and start + length < end:
                events += [(start, "reserved"), (start + length, "open")]
        if sale < delete:
            if rng.random() < 0.25:  # reserved by the buyer shortly before the sale
                reserve = max(events[-1][0] + 1.0, sale - rng.uniform(0.05, 0.5) * DAY)
                if reserve < sale and reserve < end:
                    events.append((reserve, "reserved"))
            if sale < end:
                events.append((sale, "sold"))
            return events, None
        if delete < end:
            events.append((delete, "deleted"))
            return events, delete
        return events, None

    # -- queries -------------------------------------------------------------------------------

    def sim_time(self, clock: float, clock_zero: float) -> float:
        """The simulated time at `clock` (the server's), the app's clock having started at
        `clock_zero`: from `config.clock_at` (else `config.start`), `speed` times faster."""
        c = self.config
        return (c.start if c.clock_at is None else c.clock_at) + (clock - clock_zero) * c.speed

    def live(self, t: float, feed_filter: FeedFilter) -> list[SimListing]:
        """Open listings at `t` matching the filter, newest published first (not by id), each
        at its price at `t`."""
        upto = bisect.bisect_right(self._born, t)
        found = []
        for item in reversed(self.listings[:upto]):
            shown = item.priced_at(t)
            if feed_filter.accepts(shown) and item.state_at(t) == "open":
                found.append(shown)
        return found

    def listing(self, item_id: int, t: float) -> SimListing | None:
        """The listing of that id as its pages show it at `t` (at its price then)."""
        item = self.by_id.get(item_id)
        return None if item is None else item.priced_at(t)

    def feed_page(
        self, t: float, feed_filter: FeedFilter, page: int, per_page: int, order: str | None = None
    ) -> tuple[list[SimListing], int, int]:
        """One page of the feed, the total entries and the (capped) total pages."""
        return self.page_of(self.live(t, feed_filter), page, per_page, order)

    def page_of(
        self, live: list[SimListing], page: int, per_page: int, order: str | None = None
    ) -> tuple[list[SimListing], int, int]:
        """`feed_page` over an already computed `live` list (sorted in place for price orders),
        so a caller that needs the whole feed too (promoted items) scans the world once."""
        if order == "price_low_to_high":
            live.sort(key=lambda i: (i.price, -i.born))
        elif order == "price_high_to_low":
            live.sort(key=lambda i: (-i.price, -i.born))
        total_pages = min(self.config.max_pages, max(1, math.ceil(len(live) / per_page)))
        if page > total_pages:
            return [], len(live), total_pages
        return live[(page - 1) * per_page : page * per_page], len(live), total_pages

    def truth(self, t: float, ids: Iterable[int] | None = None) -> dict[str, object]:
        """Ground truth at `t`: planted niches, histories, true sell-through and median sold price.

        Sell-through of a niche = listings sold by `t` / listings born by `t`. `categories`
        names each category as its item pages do (its path, "Women › Clothing › Jeans"). Each
        listing states its `published_at` (its birth, the feed's order), whether its id was a
        `draft_id` (allotted before publication) and when (`drafted_at`, else null), its
        `price` at `t` (a sold one's: the price it sold at) and its `prices` until `t` (when
        published, then each cut: [time, price]).
        """
        upto = bisect.bisect_right(self._born, t)
        born = self.listings[:upto]
        wanted = set(ids) if ids is not None else None
        per_niche: dict[tuple[int, int], list[SimListing]] = {}
        for item in born:
            per_niche.setdefault((item.category_id, item.brand_id), []).append(item)
        niches = []
        for key, niche in self.niches.items():
            items = per_niche.get(key, [])
            sold = [i for i in items if i.state_at(t) == "sold"]  # at the price they sold at
            niches.append(
                {
                    "category_id": key[0],
                    "brand_id": key[1],
                    "kind": niche.kind,
                    "median_price": str(niche.median_price),
                    "listed": len(items),
                    "sold": len(sold),
                    "sell_through": (len(sold) / len(items)) if items else None,
                    "median_sold_price": (
                        str(statistics.median([i.price_at(t) for i in sold])) if sold else None
                    ),
                }
            )
        return {
            "sim_time": t,
            "categories": {str(k): v for k, v in self.category_paths.items()},
            "brands": {str(k): v for k, v in self.brands.items()},
            "hot": [list(k) for k, n in self.niches.items() if n.kind == HOT],
            "saturated": [list(k) for k, n in self.niches.items() if n.kind == SATURATED],
            "niches": niches,
            "listings": [
                {
                    "id": i.id,
                    "category_id": i.category_id,
                    "brand_id": i.brand_id,
                    "price": str(i.price_at(t)),
                    "prices": [[i.born, str(i.price)], *cuts_until(i.drops, t)],
                    "relist_of": i.relist_of,
                    "published_at": i.born,
                    "draft_id": i.drafted_at is not None,
                    "drafted_at": i.drafted_at,
                    "state": i.state_at(t),
                    "history": [[when, state] for when, state in i.history_until(t)],
                }
                for i in born
                if wanted is None or i.id in wanted
            ],
        }
