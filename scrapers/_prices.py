"""Locale-aware price parsing: `12,00 €`, `€12.00`, `£9.50`, `1 234,56 zł`, `1.234,56 €`, ..."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_SYMBOLS: tuple[tuple[str, str], ...] = (
    ("€", "EUR"), ("£", "GBP"), ("zł", "PLN"), ("Kč", "CZK"), ("Ft", "HUF"), ("lei", "RON"),
    ("US$", "USD"), ("$", "USD"), ("CHF", "CHF"), ("kr", "SEK"),
)  # fmt: skip
_CODE = re.compile(r"\b([A-Z]{3})\b")
_SPACES = re.compile(r"[\s\u00a0\u202f\u2009\u2007']+")
_NUMBER = re.compile(r"-?\d(?:[\d.,\s\u00a0\u202f\u2009]*\d)?")
MONEY = re.compile(
    r"(?:€|£|US\$|\$)\s?\d(?:[\d.,\s\u00a0\u202f\u2009]*\d)?"
    r"|\d(?:[\d.,\s\u00a0\u202f\u2009]*\d)?[\s\u00a0\u202f]?(?:€|£|zł|Kč|Ft|lei|kr|EUR|GBP|PLN|USD)"
)


def parse_price(text: str) -> tuple[Decimal, str | None]:
    """The amount and ISO currency of a price as written for humans; `ValueError` otherwise."""
    currency = None
    for symbol, code in _SYMBOLS:
        if symbol in text:
            currency = code
            break
    if currency is None and (match := _CODE.search(text)):
        currency = match.group(1)
    number = _NUMBER.search(text)
    if number is None:
        raise ValueError(f"no amount in price {text!r}")
    raw = _SPACES.sub("", number.group(0))
    if "," in raw and "." in raw:
        decimal_sep = "," if raw.rfind(",") > raw.rfind(".") else "."
    elif "," in raw or "." in raw:
        sep = "," if "," in raw else "."
        tail = raw.rpartition(sep)[2]
        # One separator followed by exactly three digits is a thousands separator (1.234 / 1,234).
        decimal_sep = "" if (raw.count(sep) > 1 or len(tail) == 3) else sep
    else:
        decimal_sep = ""
    thousands = {",", "."} - {decimal_sep}
    for mark in thousands:
        raw = raw.replace(mark, "")
    if decimal_sep:
        raw = raw.replace(decimal_sep, ".")
    try:
        return Decimal(raw), currency
    except InvalidOperation as err:
        raise ValueError(f"bad amount in price {text!r}") from err
