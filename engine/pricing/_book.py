"""The price book of one niche, pure: a site's recent sales at each back-off level in, the
figures a price rests on out (sold prices, days to sell, how many sales, confirmed and likely
apart, and how old the evidence is), and which level and evidence to price by.

Which figures to price by (`NicheBook.level`, `NicheBook.basis`): the first level, exact niche
-> category x brand -> category, with at least `min_sales` confirmed sales. Likely sales
(sold by absence: the listing left the feed and no source could say) are a guess, and absence
cannot tell a sale from a withdrawal, so they count only when the category has not one
confirmed sale in the window: the site's sources are then unavailable and absence is all
there is (as an analysis chooses its sales basis). Otherwise a niche without enough confirmed
sales at any level is too thin, and says so rather than guessing.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from engine.analysis import NicheKey
from engine.analysis.deals import DEAL_MIN_SALES
from store import BOOK_LEVELS, BookLevel, MarketSaleRecord, Niche, NicheSales, SaleEvidence

MIN_SALES = DEAL_MIN_SALES  # fewer sales say too little to price anything by
CENT = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class SaleFigures:
    """What some sales say: how many, their sold prices (median, and the middle half from the
    25th to the 75th percentile), their median days to sell, and their newest and oldest
    dates (the evidence's age)."""

    n: int
    median_price: Decimal | None = None
    low_price: Decimal | None = None
    high_price: Decimal | None = None
    median_days: float | None = None
    newest: datetime | None = None
    oldest: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        def amount(value: Decimal | None) -> str | None:
            return None if value is None else f"{value:.2f}"

        return {
            "sales": self.n,
            "median_sold_price": amount(self.median_price),
            "sold_price_p25": amount(self.low_price),
            "sold_price_p75": amount(self.high_price),
            "median_days_to_sell": self.median_days,
            "newest_sale_at": None if self.newest is None else self.newest.isoformat(),
            "oldest_sale_at": None if self.oldest is None else self.oldest.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class LevelFigures:
    level: BookLevel
    label: str  # the niche at this level, in words
    confirmed: SaleFigures
    likely: SaleFigures

    def of(self, basis: SaleEvidence) -> SaleFigures:
        return self.confirmed if basis == "confirmed" else self.likely


@dataclass(frozen=True, slots=True)
class NicheBook:
    """A niche's price book: its figures at every level, and which ones a price rests on
    (`level` and `basis`; both None when the book is too thin)."""

    site: str
    niche: Niche
    currency: str | None
    levels: tuple[LevelFigures, ...]  # exact, brand, category
    level: BookLevel | None
    basis: SaleEvidence | None
    min_sales: int = MIN_SALES

    @property
    def chosen(self) -> LevelFigures | None:
        return next((f for f in self.levels if f.level == self.level), None)

    @property
    def figures(self) -> SaleFigures | None:
        """The figures a price rests on (None: too thin to price by)."""
        chosen = self.chosen
        return None if chosen is None or self.basis is None else chosen.of(self.basis)

    @property
    def typical_price(self) -> Decimal | None:
        figures = self.figures
        return None if figures is None else figures.median_price


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (as the analysis' price summaries)."""
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def _cents(value: float) -> Decimal:
    return Decimal(str(value)).quantize(CENT)


def sale_figures(sales: Sequence[MarketSaleRecord]) -> SaleFigures:
    """The figures of `sales` (any order); prices and days each over the sales that have one."""
    if not sales:
        return SaleFigures(0)
    prices = [float(s.price) for s in sales if s.price is not None]
    days = [s.days_to_sell for s in sales if s.days_to_sell is not None]
    dates = [s.sold_at for s in sales]
    return SaleFigures(
        n=len(sales),
        median_price=_cents(statistics.median(prices)) if prices else None,
        low_price=_cents(_quantile(prices, 0.25)) if prices else None,
        high_price=_cents(_quantile(prices, 0.75)) if prices else None,
        median_days=round(statistics.median(days), 1) if days else None,
        newest=max(dates),
        oldest=min(dates),
    )


def _label(niche: Niche, level: BookLevel) -> str:
    key = NicheKey(
        level, niche.category_id, niche.brand, niche.size, niche.condition, niche.category_name
    )
    return key.label


def _currency(sales: NicheSales) -> str | None:
    """The currency most of the widest level's sales are in (a site sells in one; a stray
    sale in another is left out rather than averaged with the rest)."""
    counted = Counter(s.currency for s in sales.category or sales.brand or sales.exact)
    return counted.most_common(1)[0][0] if counted else None


def _choose(
    levels: Sequence[LevelFigures], min_sales: int
) -> tuple[BookLevel | None, SaleEvidence | None]:
    for figures in levels:
        if figures.confirmed.n >= min_sales:
            return figures.level, "confirmed"
    if levels and levels[-1].confirmed.n == 0:  # no confirming source answers on this site
        for figures in levels:
            if figures.likely.n >= min_sales:
                return figures.level, "likely"
    return None, None


def niche_book(
    sales: NicheSales, min_sales: int = MIN_SALES, start: BookLevel = "exact"
) -> NicheBook:
    """The niche's price book from its recent sales (module doc: which level and evidence);
    `start` skips the narrower levels (an analysis' niche already backed off to its brand)."""
    currency = _currency(sales)
    levels: list[LevelFigures] = []
    for level in BOOK_LEVELS[BOOK_LEVELS.index(start) :]:
        rows = [s for s in sales.at(level) if s.currency == currency]
        levels.append(
            LevelFigures(
                level=level,
                label=_label(sales.niche, level),
                confirmed=sale_figures([s for s in rows if s.evidence == "confirmed"]),
                likely=sale_figures([s for s in rows if s.evidence == "likely"]),
            )
        )
    chosen, basis = _choose(levels, min_sales)
    return NicheBook(sales.site, sales.niche, currency, tuple(levels), chosen, basis, min_sales)
