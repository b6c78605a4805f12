"""Pricing: the market's price book per niche (pure figures from a site's recorded sales), the
one definition of a deal, what to pay ("buy below"), and the alerts a poll's listings earn
when judged against the book (`decide_alerts`, handed to the poll's transaction)."""

from engine.analysis.deals import DEAL_MIN_SALES, DEAL_RATIO, deal_mask, discount, is_deal

from ._alerts import decide_alerts, niche_payload
from ._book import MIN_SALES, LevelFigures, NicheBook, SaleFigures, niche_book, sale_figures
from ._buy_below import BuyBelow, buy_below
from ._words import WHOSE, ago, money, rests_on, too_thin

__all__ = [
    "DEAL_MIN_SALES",
    "DEAL_RATIO",
    "MIN_SALES",
    "WHOSE",
    "BuyBelow",
    "LevelFigures",
    "NicheBook",
    "SaleFigures",
    "ago",
    "buy_below",
    "deal_mask",
    "decide_alerts",
    "discount",
    "is_deal",
    "money",
    "niche_book",
    "niche_payload",
    "rests_on",
    "sale_figures",
    "too_thin",
]
