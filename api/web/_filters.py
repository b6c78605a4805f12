"""Template filters shared by the pages: dates, percentages, prices, niche names."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from api.naming import catalogue_name
from api.web._blueprint import blueprint
from engine.analysis import SELL_THROUGH_DEFINITION
from engine.money import CURRENCY_SYMBOLS


@blueprint.app_template_global("sell_through_definition")
def sell_through_definition() -> str:
    """One sentence for every niche table's header tooltips and note (a global: the macros
    imported without the page's context see it)."""
    return SELL_THROUGH_DEFINITION


# A notification channel's health (`ChannelView.health`): its pill's words and colour, the same
# on the alerts page and on a monitor's page.
CHANNEL_HEALTH = {
    "healthy": ("Working", "active"),
    "failing": ("Failing", "error"),
    "disabled": ("Turned off", "paused"),
    "new": ("Not used yet", "queued"),
    "unconfirmed": ("Waiting for its recipient", "queued"),
}


@blueprint.app_template_filter("channel_health")
def channel_health(health: str) -> tuple[str, str]:
    """A channel's health as its pill's words and `state-*` colour (an unknown value is shown
    as itself, never blank)."""
    return CHANNEL_HEALTH.get(health, (health, "queued"))


@blueprint.app_template_filter("catalogue")
def catalogue(url: str | None) -> str:
    """A catalogue URL in words (`naming.catalogue_name`): how a monitor without a label is
    called on a page, never by its raw URL."""
    return catalogue_name(url)


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
    symbol = CURRENCY_SYMBOLS.get(currency or "", (currency or "") + " ")
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


@blueprint.app_template_filter("sold_of")
def sold_of(n: dict[str, Any]) -> dict[str, Any]:
    """A niche's "sold / sold + open" cell: `sold`, `base` (sell-through's denominator, the
    same one: `SELL_THROUGH_DEFINITION`) and `apart`, the deleted and reserved listings left
    out of both, in words ("" when none). Analyses stored before `sell_through_base` was
    written derive it from `sold` and `supply`, as the figure always was."""
    sold, open_now = _count(n.get("sold")), _count(n.get("supply"))
    base = n.get("sell_through_base")
    apart = [
        f"{count} {word}" for word in ("deleted", "reserved") if (count := _count(n.get(word)))
    ]
    return {
        "sold": sold,
        "base": base if isinstance(base, int) and not isinstance(base, bool) else sold + open_now,
        "apart": " · ".join(apart) + " left out" if apart else "",
    }


@blueprint.app_template_filter("days_cell")
def days_cell(n: dict[str, Any]) -> dict[str, str]:
    """A niche's "median days to sell" cell: `text`, the figure or "—"; `note`, a few words
    under it when the figure is withheld ("" otherwise); `why`, the engine's whole sentence
    (`days_note`, also among the niche's reasons), for the cell's title. A reseller who sees
    "—" beside "5 / 5 sold" should not have to open the reasons to learn it is no fault."""
    days = _num(n.get("km_median_days"))
    note_given = n.get("days_note")
    why = note_given if isinstance(note_given, str) else ""
    if days is not None:
        # An uncertain figure keeps its sentence in the title and the reasons only: most
        # niches of a month's window would wear "uncertain", which says nothing apart.
        return {"text": num(days), "note": "", "why": why}
    if not why:  # an analysis without history times nothing: no figure, nothing to explain
        note = ""
    elif _count(n.get("sold")) == 0:
        note = "no sale yet"
    elif why.startswith("Withheld"):
        note = "few sales of known age"
    else:
        note = "most still unsold"
    return {"text": "—", "note": note, "why": why}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _days(value: float) -> str:
    return f"{value:.1f} day{'' if round(value, 1) == 1 else 's'}"


@blueprint.app_template_filter("why")
def why(n: dict[str, Any], currency: str | None = "EUR") -> list[str]:
    """The reasons behind one ranked niche, in sentences: the score and its parts (with the
    shrinkage towards the broader niche), days to sell with their interval, the trend, hot or
    not and why, and how its sales are known. Missing figures are left out, never invented."""
    lines: list[str] = []
    parts = n.get("score_parts") if isinstance(n.get("score_parts"), dict) else None
    if parts and isinstance(parts.get("explanation"), str):
        lines.append(f"Score: {parts['explanation']}.")
    elif n.get("score_kind") == "demand_proxy":
        lines.append("Score: no sales history yet, so it ranks by favourites per listing-day.")
    low, high, st = (
        _num(n.get("sell_through_low")),
        _num(n.get("sell_through_high")),
        _num(n.get("sell_through")),
    )
    if st is not None:
        interval = f" (95% interval {pct(low)} to {pct(high)})" if low is not None else ""
        cell = sold_of(n)
        lines.append(
            f"Sell-through {pct(st)}{interval}: {cell['sold']} sold of the {cell['base']} "
            "listings that sold or are still open"
            + (f" ({cell['apart']})." if cell["apart"] else ".")
        )
    parent = parts.get("parent") if parts else None
    if parts and isinstance(parent, dict) and parent.get("label"):
        st_raw, st_shrunk = _num(parts.get("sell_through")), _num(parts.get("sell_through_shrunk"))
        price_raw, price_shrunk = parts.get("price"), parts.get("price_shrunk")
        lines.append(
            f"Few listings, so each figure is pulled towards {parent['label']} "
            f"(weight of {parts.get('prior_weight')} listings): sell-through {pct(st_raw)} → "
            f"{pct(st_shrunk)}, sold price {money(price_raw, currency)} → "
            f"{money(price_shrunk, currency)}."
        )
    days = _num(n.get("km_median_days"))
    d_low, d_high = _num(n.get("km_median_low")), _num(n.get("km_median_high"))
    if days is not None:
        interval = (
            f" (95% interval {d_low:.1f} to {d_high:.1f})"
            if d_low is not None and d_high is not None
            else ""
        )
        lines.append(f"Half of its listings sell within {_days(days)}{interval}.")
    if isinstance(n.get("days_note"), str):
        lines.append(n["days_note"])
    trend = n.get("trend") if isinstance(n.get("trend"), dict) else None
    if trend and trend.get("direction"):
        lines.append(
            f"Trend {trend['direction']}: {trend.get('recent_sold')} sales in the recent half of "
            f"the window, {trend.get('previous_sold')} in the half before."
        )
    if isinstance(n.get("hot_reason"), str):
        lines.append(n["hot_reason"])
    sales = _sales_line(n)
    if sales:
        lines.append(sales)
    key = n.get("niche")
    if isinstance(key, dict) and isinstance(key.get("backoff"), str):
        lines.append(key["backoff"])
    return lines


def _sales_line(n: dict[str, Any]) -> str | None:
    """A niche's sales by evidence; likely ones come with what absence cannot tell."""
    confirmed, likely = n.get("sold_confirmed"), n.get("sold_likely")
    if not (isinstance(confirmed, int) and isinstance(likely, int) and confirmed + likely):
        return None
    return (
        f"Sales: {confirmed} confirmed by the marketplace (item page or detail API), "
        f"{likely} likely (gone from the feed, not confirmed"
        + ("; absence cannot tell a sale from a withdrawal)." if likely else ").")
    )
