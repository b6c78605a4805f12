"""Defensive field readers shared by the JSON and HTML parsers (types drift, fields vanish)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from ._prices import parse_price

ITEM_PATH_ID = re.compile(r"/items/(\d+)")


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    return None


# After JSON decoding, a surrogate code point left in a str is a lone one (a "\ud800"
# escape with no partner): it cannot be encoded as UTF-8, so stored it would make every page
# showing it fail. The marketplace's text is untrusted: such a character becomes U+FFFD.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def as_str(value: Any) -> str | None:
    if isinstance(value, str):
        value = _LONE_SURROGATE.sub("\ufffd", value.strip())
        return value or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if value in (0, 1, "true", "false", "0", "1"):
        return value in (1, "true", "1")
    return None


def dig(data: Any, *path: str | int) -> Any:
    for key in path:
        if isinstance(data, dict) and isinstance(key, str):
            data = data.get(key)
        elif isinstance(data, list) and isinstance(key, int) and -len(data) <= key < len(data):
            data = data[key]
        else:
            return None
    return data


def as_money(value: Any, currency: Any = None) -> tuple[Decimal | None, str | None]:
    """`{"amount": "12.0", "currency_code": "EUR"}`, `"12.0"`, `12`, or `"12,00 €"`."""
    code = as_str(currency)
    if isinstance(value, dict):
        code = as_str(value.get("currency_code")) or as_str(value.get("currency")) or code
        value = value.get("amount")
    if isinstance(value, bool) or value is None:
        return None, code
    if isinstance(value, int | float):
        return Decimal(str(value)), code
    if isinstance(value, str):
        try:
            return Decimal(value.strip()), code
        except InvalidOperation:
            try:
                amount, found = parse_price(value)
            except ValueError:
                return None, code
            return amount, code or found
    return None, code


def as_timestamp(value: Any) -> datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int | float) and 0 < value < 10**11:
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def id_from_path(value: Any) -> int | None:
    if isinstance(value, str) and (match := ITEM_PATH_ID.search(value)):
        return int(match.group(1))
    return None


def absolute(url: str | None, origin: str | None) -> str | None:
    if url and url.startswith("/") and origin:
        return origin.rstrip("/") + url
    return url


def item_id_of(item: Any) -> int:
    """The id of a catalogue or detail item (`id`, else `item_box.item_id`, else the id in its
    path or URL); `ValueError` when the item is not an object or has no usable id."""
    if not isinstance(item, dict):
        raise ValueError(f"item is a {type(item).__name__}, not an object")
    item_id = (
        as_int(item.get("id"))
        or as_int(dig(item, "item_box", "item_id"))
        or id_from_path(item.get("path"))
        or id_from_path(item.get("url"))
    )
    if item_id is None:
        raise ValueError(f"item without a usable id ({str(item.get('id'))[:40]!r})")
    return item_id


class Missing:
    """Collects the names of fields that were absent: `keep(name, value)` passes `value` on
    and notes `name` when it is None, so callers can tell "unknown" from "zero"."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def keep(self, name: str, value: Any) -> Any:
        if value is None:
            self.names.append(name)
        return value
