"""Template filters shared by the pages: dates, percentages, prices, niche names."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ._blueprint import blueprint


@blueprint.app_template_filter("when")
def when(value: datetime | str | None) -> str:
    """`22 Nov 2026, 09:12 UTC`; an em dash for nothing."""
    if value is None:
        return "—"
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%d %b %Y, %H:%M UTC")


@blueprint.app_template_filter("pct")
def pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


@blueprint.app_template_filter("num")
def num(value: float | int | None, digits: int = 1) -> str:
    if value is None:
        return "—"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


@blueprint.app_template_filter("money")
def money(value: Any, currency: str | None = "EUR") -> str:
    if value is None:
        return "—"
    symbol = {"EUR": "€", "USD": "$", "GBP": "£"}.get(currency or "", (currency or "") + " ")
    return f"{symbol}{float(value):,.2f}"


@blueprint.app_template_filter("niche")
def niche(key: dict[str, Any] | None) -> str:
    """A niche's readable name: its label, else its parts."""
    if not key:
        return "—"
    if key.get("label"):
        return str(key["label"])
    parts = [key.get("brand"), key.get("size"), key.get("condition")]
    text = " · ".join(str(p) for p in parts if p)
    return text or f"Category {key.get('category_id')}"
