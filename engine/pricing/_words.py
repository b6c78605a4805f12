"""The price book in words: amounts, how old the evidence is, which level a figure rests on,
and the sentence every alert's reason quotes (the figure, over how many sales, of which
evidence, how fast they sold, how old they are)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from engine.money import format_money
from store import BookLevel

from ._book import NicheBook

# Whose sales a figure is, by the level it rests on.
WHOSE: dict[BookLevel, str] = {
    "exact": "this niche",
    "brand": "its brand in this category (all sizes and conditions)",
    "category": "its category (all brands)",
}


def money(amount: Decimal | float | None, currency: str | None) -> str:
    """Decimal("12.5"), "EUR" -> "€12.50" (`format_money`); None -> "no price"."""
    return "no price" if amount is None else format_money(amount, currency)


def ago(then: datetime, now: datetime) -> str:
    """How long before `now` `then` was, in the largest unit that fits: "5 minutes ago"."""
    seconds = max(0.0, (now - then).total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count > 1 else ''} ago"
    return "just now"


def versus(price: Decimal, typical: Decimal) -> str:
    """A price against a typical one: "45% under", "12% over", "at"."""
    share = 1 - float(price / typical)
    if round(share, 2) == 0:
        return "at"
    return f"{abs(share):.0%} {'under' if share > 0 else 'over'}"


def rests_on(book: NicheBook, now: datetime) -> str:
    """What a priced book says: "the €43.00 this niche sold for over its last 10 sales
    (confirmed; middle half €38.00-€49.00), which took 0.9 days (newest 2 hours ago, oldest
    12 days ago)". Empty for a book too thin to price by (see `too_thin`)."""
    figures, level, basis = book.figures, book.level, book.basis
    if figures is None or figures.median_price is None or level is None or basis is None:
        return ""
    c = book.currency
    sold = f"its last {figures.n} sales" if figures.n > 1 else "its only sale"
    evidence = "confirmed" if basis == "confirmed" else "likely sales: no source confirms sales"
    spread = ""
    low, high = figures.low_price, figures.high_price
    if low is not None and high is not None and low != high:
        spread = f"; middle half {money(low, c)}-{money(high, c)}"
    text = (
        f"the {money(figures.median_price, c)} {WHOSE[level]} sold for over {sold} "
        f"({evidence}{spread})"
    )
    if figures.median_days is not None:
        text += f", which took {figures.median_days:g} days"
    if figures.newest is not None and figures.oldest is not None:
        text += f" (newest {ago(figures.newest, now)}, oldest {ago(figures.oldest, now)})"
    return text


def too_thin(book: NicheBook) -> str:
    """Why a book prices nothing: "the price book holds too few sales of this niche to
    price it (2 confirmed and 4 likely within its brand in this category, 3 needed)"."""
    widest = book.levels[-1] if book.levels else None
    if widest is None or widest.confirmed.n + widest.likely.n == 0:
        return "the price book holds no sale of this niche's category yet"
    counted = f"{widest.confirmed.n} confirmed"
    if widest.likely.n:
        counted += f" and {widest.likely.n} likely, which count only where no sale is confirmed"
    return (
        f"the price book holds too few sales of this niche to price it ({counted} in "
        f"{WHOSE[widest.level]}; {book.min_sales} needed)"
    )
