"""Amounts as people read them, and the one table of currency symbols.

Every sentence the service writes about a price (an analysis' explanations and alerts, the
price book's reasons, notification e-mails, the web pages) takes its symbol from
`CURRENCY_SYMBOLS`; a currency without one is written by its ISO code. Parsing a price the
marketplace wrote is the scrapers' (`scrapers/_prices.py`), which read many more spellings.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Final

CURRENCY_SYMBOLS: Final[Mapping[str, str]] = MappingProxyType({"EUR": "€", "GBP": "£", "USD": "$"})
"""ISO 4217 code -> the symbol written before the amount."""


def format_money(amount: Decimal | float, currency: str | None) -> str:
    """12.5, "EUR" -> "€12.50"; "PLN" -> "12.50 PLN" (no symbol: the code follows the
    amount); no currency (unknown, or several mixed) -> "12.50"."""
    symbol = CURRENCY_SYMBOLS.get(currency or "")
    if symbol:
        return f"{symbol}{amount:,.2f}"
    return f"{amount:,.2f} {currency}" if currency else f"{amount:,.2f}"
