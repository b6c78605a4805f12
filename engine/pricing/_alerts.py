"""A poll's listing alerts, decided: which of its new and cheaper listings each rule alerts on
(new listing, deal, price drop), and what the alert says. Pure: handed to the poll's
transaction (`PollDecision.alerts`) as the listing state machine is, it reads only what the
store gives it (`PollAlerts`: the rules, the listings, their niches' price book, the
workspace's buying costs) and returns the alerts to queue (`AlertDraft`).

Every reason names the figure it rests on: the asking price against the price book's typical
sold price, with how many sales, their evidence, the level the niche was backed off to, how
fast they sold and how old they are, then what to pay ("buy below"). A niche whose book is
too thin says so instead of guessing, and is never a deal.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from engine.analysis.deals import discount, is_deal
from store import (
    AlertCandidate,
    AlertDraft,
    ListingAlert,
    ListingView,
    NotifyKind,
    PollAlerts,
    RuleRecord,
    confidence_admits,
    listing_matches,
    niche_confidence,
)

from ._book import NicheBook, niche_book
from ._buy_below import BuyBelow, buy_below
from ._words import money, rests_on, too_thin, versus

NicheKey = tuple[int | None, str | None, str | None, str | None]


def decide_alerts(poll: PollAlerts) -> list[AlertDraft]:
    """The alerts of one poll, rule by rule, listing by listing, kinds in name order; none
    already queued (`poll.queued`), none whose listing a rule's filters refuse."""
    books: dict[NicheKey, NicheBook | None] = {}
    drafts: list[AlertDraft] = []
    for rule in poll.rules:
        for candidate in poll.candidates:
            drafts += _for_rule(poll, rule, candidate, books)
    return drafts


def _book(
    poll: PollAlerts, candidate: AlertCandidate, books: dict[NicheKey, NicheBook | None]
) -> NicheBook | None:
    key = candidate.niche.key
    if key not in books:
        sales = poll.books.get(key)
        books[key] = None if sales is None else niche_book(sales)
    return books[key]


def _priced_sales(book: NicheBook | None) -> int:
    """The sales a niche's price rests on, for `min_confidence` (a thin book: its exact
    niche's confirmed sales, too few to price by)."""
    if book is None:
        return 0
    figures = book.figures
    return figures.n if figures is not None else book.levels[0].confirmed.n


def _for_rule(
    poll: PollAlerts,
    rule: RuleRecord,
    candidate: AlertCandidate,
    books: dict[NicheKey, NicheBook | None],
) -> list[AlertDraft]:
    found: tuple[NotifyKind, ...] = (
        ("deal", "price_drop") if candidate.previous_price is not None else ("deal", "new_listing")
    )
    subject = candidate.subject
    wanted = [k for k in found if k in rule.kinds and (rule.id, k, subject) not in poll.queued]
    if not wanted or not listing_matches(candidate.listing, rule.filters):
        return []
    book = _book(poll, candidate, books)
    minimum = rule.filters.min_confidence
    if minimum != "any" and (book is None or not confidence_admits(minimum, _priced_sales(book))):
        return []
    drafts = []
    for kind in wanted:
        if kind == "deal" and not _is_deal(candidate.listing, book, rule.deal_ratio):
            continue
        drafts.append(AlertDraft(rule.id, kind, subject, _body(kind, poll, candidate, book)))
    return drafts


def _is_deal(listing: ListingView, book: NicheBook | None, ratio: float) -> bool:
    figures = None if book is None else book.figures
    if figures is None or figures.median_price is None or listing.price is None:
        return False
    return is_deal(float(listing.price), float(figures.median_price), figures.n, ratio)


def _body(
    kind: NotifyKind, poll: PollAlerts, candidate: AlertCandidate, book: NicheBook | None
) -> ListingAlert:
    typical = None if book is None else book.typical_price
    buy = None if book is None or typical is None else buy_below(typical, poll.costs, book.currency)
    return ListingAlert(
        listing=_listing(candidate.listing, candidate.previous_price),
        niche=None if book is None else niche_payload(book),
        reason=_reason(kind, poll, candidate, book, buy),
        figures=_figures(candidate, book, buy, poll),
        buy_below=None if buy is None else buy.to_json(),
    )


def _listing(x: ListingView, previous: Decimal | None) -> dict[str, Any]:
    return {
        "item_id": x.item_id, "title": x.title, "brand": x.brand, "size": x.size,
        "condition": x.condition, "category": x.category_name,
        "price": None if x.price is None else f"{x.price:.2f}",
        "previous_price": None if previous is None else f"{previous:.2f}",
        "currency": x.currency, "url": x.url, "photo_url": x.photo_url, "seller": x.seller_login,
    }  # fmt: skip


def niche_payload(book: NicheBook) -> dict[str, Any]:
    """The `niche` part of an alert: the level priced by (or the exact niche, too thin), its
    figures, and `confidence` from the sales they rest on."""
    chosen = book.chosen or book.levels[0]
    figures = book.figures
    sold = _priced_sales(book)
    return {
        "label": chosen.label,
        "level": book.level,
        "basis": book.basis,
        **(figures.to_json() if figures is not None else {}),
        "sold": sold,
        "sell_through": None,  # the price book counts sales, not the listings that did not sell
        "median_sold_price": None if book.typical_price is None else f"{book.typical_price:.2f}",
        "median_days_to_sell": None if figures is None else figures.median_days,
        "confidence": niche_confidence(sold),
    }


def _reason(
    kind: NotifyKind,
    poll: PollAlerts,
    candidate: AlertCandidate,
    book: NicheBook | None,
    buy: BuyBelow | None,
) -> str:
    x, previous = candidate.listing, candidate.previous_price
    price = money(x.price, x.currency)
    if previous is not None and x.price is not None:
        cut = f"{1 - float(x.price / previous):.0%} less"
        head = f"price cut from {money(previous, x.currency)} to {price} ({cut})"
    else:
        head = f"asks {price}" if kind == "deal" else f"new at {price}"
    if book is None:
        return f"{head}; its niche's price book was not read in this poll"
    typical = book.typical_price
    if typical is None:
        return f"{head}; {too_thin(book)}"
    against = "" if x.price is None else f", {versus(x.price, typical)}"
    text = f"{head}{against} {rests_on(book, poll.at)}"
    return text if buy is None else f"{text}; {buy.line}"


def _figures(
    candidate: AlertCandidate, book: NicheBook | None, buy: BuyBelow | None, poll: PollAlerts
) -> dict[str, float | int | None]:
    price = candidate.listing.price
    figures = None if book is None else book.figures
    typical = None if figures is None else figures.median_price
    shown: dict[str, float | int | None] = {
        "price": None if price is None else float(price),
        "median_sold_price": None if typical is None else float(typical),
        "discount": None
        if price is None or typical is None
        else round(discount(float(price), float(typical)), 2),
        "sales": None if figures is None else figures.n,
        "median_days_to_sell": None if figures is None else figures.median_days,
        "newest_sale_days": None
        if figures is None or figures.newest is None
        else round((poll.at - figures.newest).total_seconds() / 86400, 1),
        "buy_below": None if buy is None or buy.price is None else float(buy.price),
    }
    if candidate.previous_price is not None:
        shown["previous_price"] = float(candidate.previous_price)
    return shown
