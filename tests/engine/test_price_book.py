"""The price book's figures, pure: back-off levels, confirmed and likely sales apart, what a
thin book says, the one definition of a deal, "buy below", and the reasons alerts give."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import numpy as np

from engine.pricing import (
    DEAL_RATIO,
    buy_below,
    deal_mask,
    decide_alerts,
    is_deal,
    niche_book,
    too_thin,
)
from store import (
    AlertCandidate,
    BuyingCosts,
    ListingView,
    MarketSaleRecord,
    Niche,
    NicheSales,
    PollAlerts,
    RuleFilters,
    RuleRecord,
    SaleEvidence,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SITE = "https://www.vinted.fr"
JEANS = Niche(5, "Levi's", "W32", "Very good", "Men › Jeans")


def sale(
    item_id: int,
    price: str,
    *,
    evidence: SaleEvidence = "confirmed",
    hours_ago: float = 1,
    days: float = 1.0,
    currency: str = "EUR",
) -> MarketSaleRecord:
    return MarketSaleRecord(
        SITE, item_id, 5, "Men › Jeans", "Levi's", "W32", "Very good", Decimal(price), currency,
        days, evidence, NOW - timedelta(hours=hours_ago),
    )  # fmt: skip


def sales(
    exact: list[MarketSaleRecord],
    brand: list[MarketSaleRecord] | None = None,
    category: list[MarketSaleRecord] | None = None,
) -> NicheSales:
    """Each level holds the narrower one's sales too, as the store reads them."""
    wider = [*exact, *(brand or [])]
    return NicheSales(
        SITE, JEANS, tuple(exact), tuple(wider), tuple([*wider, *(category or [])]),
        since=NOW - timedelta(days=90), limit=50,
    )  # fmt: skip


def test_the_exact_niche_prices_when_it_has_three_confirmed_sales() -> None:
    book = niche_book(
        sales([sale(1, "20", days=0.5, hours_ago=2), sale(2, "24", days=1), sale(3, "40", days=3)])
    )
    assert (book.level, book.basis, book.currency) == ("exact", "confirmed", "EUR")
    figures = book.figures
    assert figures is not None
    assert (figures.n, figures.median_price) == (3, Decimal("24.00"))
    assert (figures.low_price, figures.high_price) == (Decimal("22.00"), Decimal("32.00"))
    assert figures.median_days == 1.0
    assert (figures.newest, figures.oldest) == (NOW - timedelta(hours=1), NOW - timedelta(hours=2))


def test_back_off_to_the_brand_then_the_category() -> None:
    two = [sale(1, "20"), sale(2, "22")]
    brand = niche_book(sales(two, brand=[sale(3, "30")]))
    assert (brand.level, brand.typical_price) == ("brand", Decimal("22.00"))
    assert brand.chosen is not None
    assert brand.chosen.label == "Men › Jeans · Levi's · sizes and conditions mixed"
    category = niche_book(sales([sale(1, "20")], category=[sale(3, "30"), sale(4, "50")]))
    assert (category.level, category.typical_price) == ("category", Decimal("30.00"))
    thin = niche_book(sales(two))
    assert (thin.level, thin.basis, thin.figures, thin.typical_price) == (None, None, None, None)
    assert too_thin(thin) == (
        "the price book holds too few sales of this niche to price it (2 confirmed in its "
        "category (all brands); 3 needed)"
    )
    assert too_thin(niche_book(sales([]))) == (
        "the price book holds no sale of this niche's category yet"
    )


def test_likely_sales_count_only_where_no_sale_is_confirmed() -> None:
    likely = [sale(i, "30", evidence="likely") for i in range(1, 6)]
    # Two confirmed sales and five likely ones: too thin, the likely ones being a guess.
    mixed = niche_book(sales([sale(9, "10"), sale(10, "12"), *likely]))
    assert mixed.level is None
    assert mixed.levels[0].confirmed.n == 2 and mixed.levels[0].likely.n == 5
    assert "2 confirmed and 5 likely" in too_thin(mixed)
    # No confirmed sale in the whole category (no source answers): the likely ones price it.
    guessed = niche_book(sales(likely))
    assert (guessed.level, guessed.basis, guessed.typical_price) == (
        "exact", "likely", Decimal("30.00")
    )  # fmt: skip
    # With enough confirmed sales the likely ones are left aside.
    confirmed = niche_book(sales([sale(9, "10"), sale(10, "12"), sale(11, "14"), *likely]))
    assert (confirmed.basis, confirmed.typical_price) == ("confirmed", Decimal("12.00"))


def test_a_stray_currency_is_left_out() -> None:
    book = niche_book(
        sales([sale(1, "20"), sale(2, "22"), sale(3, "24"), sale(4, "9", currency="GBP")])
    )
    assert book.currency == "EUR" and book.figures is not None and book.figures.n == 3


def test_one_definition_of_a_deal() -> None:
    assert DEAL_RATIO == 0.7
    assert is_deal(16.8, 24.0, 3) and not is_deal(16.9, 24.0, 3)
    assert not is_deal(1.0, 24.0, 2)  # too few sales to call it
    assert not is_deal(None, 24.0, 9) and not is_deal(1.0, None, 9)
    prices = np.array([16.8, 16.9, 1.0, np.nan, 5.0])
    reference = np.array([24.0, 24.0, 24.0, 24.0, np.nan])
    sold = np.array([3, 3, 2, 9, 9])
    assert deal_mask(prices, reference, sold).tolist() == [True, False, False, False, False]


def test_buy_below_with_the_defaults_and_custom_costs() -> None:
    default = buy_below(Decimal("43.00"), BuyingCosts(), "EUR")
    assert (default.price, default.margin) == (Decimal("25.60"), Decimal("12.90"))
    assert default.line == (
        "buy below €25.60: the €43.00 it sells for, less 30% margin (€12.90), €4.00 shipping "
        "and €0.50 packaging"
    )
    custom = BuyingCosts(shipping=Decimal("2.00"), packaging=Decimal("0"), margin=Decimal("0.5"))
    assert buy_below(Decimal("43.00"), custom, "EUR").price == Decimal("19.50")
    nothing = buy_below(Decimal("6.00"), BuyingCosts(), "EUR")
    assert nothing.price is None and nothing.line.startswith("no price leaves your margin")


def _rule(**fields: object) -> RuleRecord:
    values: dict[str, object] = {
        "id": "rul_1", "workspace_id": "ws_1", "monitor_id": None, "name": "r",
        "kinds": ("new_listing", "deal", "price_drop"), "filters": RuleFilters(),
        "deal_ratio": 0.7, "channel_ids": (), "mode": "instant", "digest_hour": 8,
        "quiet_start": None, "quiet_end": None, "timezone": "UTC", "enabled": True,
        "created_at": NOW, "updated_at": NOW,
    }  # fmt: skip
    return RuleRecord(**(values | fields))  # type: ignore[arg-type]


def _candidate(item_id: int, price: str, previous: str | None = None) -> AlertCandidate:
    view = ListingView(
        item_id, "Levi's 501", "Levi's", "W32", "Very good", 5, "Men › Jeans", Decimal(price),
        "EUR", None, None, None, None, None,
    )  # fmt: skip
    return AlertCandidate(view, None if previous is None else Decimal(previous))


def _poll(book: NicheSales, *candidates: AlertCandidate, **fields: object) -> PollAlerts:
    values: dict[str, object] = {
        "site": SITE, "at": NOW, "rules": (_rule(),), "candidates": candidates,
        "books": {JEANS.key: book}, "costs": BuyingCosts(), "queued": frozenset(),
    }  # fmt: skip
    return PollAlerts(**(values | fields))  # type: ignore[arg-type]


def test_reasons_name_the_price_the_sales_the_level_and_their_age() -> None:
    ten = [sale(i, str(38 + i), days=0.9, hours_ago=2 + 24 * i) for i in range(10)]
    drafts = decide_alerts(_poll(sales(ten), _candidate(1, "23"), _candidate(2, "60", "70")))
    by = {(d.kind, d.subject): d for d in drafts}
    assert set(by) == {("deal", "item:1"), ("new_listing", "item:1"), ("price_drop", "item:2")}
    deal = by["deal", "item:1"].body.to_json()
    assert deal["reason"] == (
        "asks €23.00, 46% under the €42.50 this niche sold for over its last 10 sales "
        "(confirmed; middle half €40.25-€44.75), which took 0.9 days (newest 2 hours ago, "
        "oldest 9 days ago); buy below €25.25: the €42.50 it sells for, less 30% margin "
        "(€12.75), €4.00 shipping and €0.50 packaging"
    )
    assert deal["niche"]["level"] == "exact" and deal["niche"]["basis"] == "confirmed"
    assert deal["niche"]["sold"] == 10 and deal["niche"]["confidence"] == "medium"
    assert deal["figures"]["discount"] == 0.46 and deal["figures"]["sales"] == 10
    assert deal["buy_below"]["price"] == "25.25"
    drop = by["price_drop", "item:2"].body.reason
    assert drop.startswith("price cut from €70.00 to €60.00 (14% less), 41% over the €42.50")


def test_a_thin_book_says_so_and_likely_sales_are_named() -> None:
    thin = decide_alerts(_poll(sales([sale(1, "40")]), _candidate(1, "5")))
    [new] = thin  # no deal on a guess
    assert new.kind == "new_listing"
    assert new.body.reason == (
        "new at €5.00; the price book holds too few sales of this niche to price it "
        "(1 confirmed in its category (all brands); 3 needed)"
    )
    assert new.body.to_json()["buy_below"] is None
    assert new.body.to_json()["niche"]["level"] is None
    likely = [sale(i, "40", evidence="likely") for i in range(3)]
    drafts = decide_alerts(_poll(sales(likely), _candidate(1, "5")))
    deal = next(d for d in drafts if d.kind == "deal")
    assert "over its last 3 sales (likely sales: no source confirms sales)" in deal.body.reason


def test_queued_filtered_and_unread_niches() -> None:
    book = sales([sale(i, "40") for i in range(3)])
    queued = frozenset({("rul_1", "deal", "item:1")})
    assert [d.kind for d in decide_alerts(_poll(book, _candidate(1, "5"), queued=queued))] == [
        "new_listing"
    ]
    picky = _rule(filters=RuleFilters(brands=("Diesel",)))
    assert decide_alerts(_poll(book, _candidate(1, "5"), rules=(picky,))) == []
    confident = _rule(filters=RuleFilters(min_confidence="medium"))
    assert decide_alerts(_poll(book, _candidate(1, "5"), rules=(confident,))) == []
    unread = decide_alerts(_poll(book, _candidate(1, "5"), books={}))
    assert [d.kind for d in unread] == ["new_listing"]
    assert unread[0].body.reason.endswith("its niche's price book was not read in this poll")
