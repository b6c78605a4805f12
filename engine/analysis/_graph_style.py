"""What the four graphs share: their size, their text, and the spec every one starts from.

Sized for a phone first. The SVG carries a viewBox and pages draw it at the width of its
container (`width: 100%`), which is about 326 px on a 390 px phone: a graph about 370 px wide
in all (plot `WIDTH` plus axes) with text of 14 px or more keeps every text at 11 px or more
there, and on a desktop, two graphs side by side, it is drawn a little larger than drawn here
(about 16 px text). Nothing is cropped: Vega sizes the SVG to hold every axis, title and
legend, so long titles are kept short instead.
"""

from __future__ import annotations

from typing import Any

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
WIDTH, HEIGHT = 290, 230  # the plot area, px; axes, titles and legends come on top
TEXT = 14  # the smallest text in any graph, px (legends and tick labels)
LABEL = 14  # the niche map's rank labels (bold)
LABEL_LINE = 16  # their line height, when a label lists several ranks
CONFIG: dict[str, Any] = {
    "font": "DejaVu Sans, Helvetica, Arial, sans-serif",
    "title": {"fontSize": 15, "anchor": "start", "offset": 8, "subtitleFontSize": TEXT},
    "axis": {"labelFontSize": TEXT, "titleFontSize": TEXT, "titlePadding": 6},
    "legend": {
        "labelFontSize": TEXT,
        "titleFontSize": TEXT,
        "orient": "bottom",
        "direction": "horizontal",
        # Never "Median sold price (E…)": a legend's title is as long as it needs.
        "titleLimit": 1000,
        # Two legends (the niche map's colour and size) one under the other, not side by
        # side: side by side they are wider than the plot and shrink the whole graph.
        "layout": {"bottom": {"direction": "vertical", "anchor": "start"}},
    },
    "text": {"fontSize": LABEL},
    "view": {"stroke": None},
}


def base(title: str, rows: list[dict[str, Any]], height: int = HEIGHT) -> dict[str, Any]:
    """A Vega-Lite spec with the graphs' size and text, titled `title`, its data inline."""
    return {
        "$schema": SCHEMA,
        "title": title,
        "width": WIDTH,
        "height": height,
        "config": CONFIG,
        "data": {"values": rows},
    }


def mark(rank: int) -> str:
    """How a graph names a top niche: its rank; the page lists the names under the graphs."""
    return f"#{rank}"


def money_title(what: str, currency: str | None) -> str:
    return f"{what} ({currency})" if currency else what


def count_values(highest: int) -> list[int]:
    """A few whole numbers from 1 to `highest` for a count legend (never "2.5 sold")."""
    return sorted({v for v in (1, highest // 4, highest // 2, highest) if v >= 1})


__all__ = [
    "CONFIG",
    "HEIGHT",
    "LABEL",
    "LABEL_LINE",
    "SCHEMA",
    "TEXT",
    "WIDTH",
    "base",
    "count_values",
    "mark",
    "money_title",
]
