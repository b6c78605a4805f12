"""The niche map: competition open now (across) against sell-through (up), one dot a niche.

Across is a symlog scale (log-like, and 0 is a value: a sold-out niche sits on the left edge)
ticked at 1, 2, 5, 10, 20, ... only: a "0" tick on a log-looking axis reads as an error. Both
scales have explicit domains (so Vega adds no "nice" rounding), which is what lets
`_graph_labels` know where each dot is drawn and lay the rank labels out beforehand; the
labels are then drawn at those pixels (`scale: null`), with a white halo under them so they
read over the dots.
"""

from __future__ import annotations

import math
from typing import Any

from ._graph_labels import Label, Layout, place_labels
from ._graph_style import HEIGHT, LABEL, LABEL_LINE, WIDTH, base, count_values, money_title
from ._niche_records import NicheStats
from ._result import AnalysisResult

MAP_POINTS = 300
_PAD = 2.0  # px between a label's box and its text (`_graph_labels` boxes hold that margin)


def log_ticks(top: float) -> list[int]:
    """1, 2, 5, 10, 20, 50, ... up to `top`: the ticks of the competition axis."""
    ticks: list[int] = []
    step = 1
    while step <= top:
        ticks.extend(t for t in (step, 2 * step, 5 * step) if t <= top)
        step *= 10
    return ticks


def _axis_top(highest: float) -> int:
    """The competition axis' end: the first 1-2-5 tick past `highest` with a margin (at least
    10), so that the axis ends on a labelled tick."""
    need = max(10.0, highest * 1.15)
    step = 1
    while True:
        for t in (step, 2 * step, 5 * step):
            if t >= need:
                return t
        step *= 10


def niche_map(result: AnalysisResult) -> dict[str, Any]:
    history = result.evidence == "history"
    top = {n.rank for n in result.top}
    shown = [n for n in result.niches[:MAP_POINTS] if (n.sell_through is not None) or not history]
    y_field, y_title = (
        ("sell_through", "Sell-through") if history else ("demand_velocity", "Favourites per day")
    )
    x_top = _axis_top(max((n.supply for n in shown), default=0))
    y_values = [getattr(n, y_field) or 0.0 for n in shown] or [1.0]
    y_top = 1.0 if history else max(1e-9, max(y_values) * 1.1)

    def px(n: NicheStats) -> tuple[float, float]:
        # Where Vega draws the dot (symlog x with constant 1, linear y, explicit domains).
        x = WIDTH * math.log1p(n.supply) / math.log1p(x_top)
        return x, HEIGHT * (1 - (getattr(n, y_field) or 0.0) / y_top)

    layout = place_labels(
        [(n.rank, *px(n)) for n in shown if n.rank in top], WIDTH, HEIGHT, LABEL, LABEL_LINE
    )
    rows = [
        {
            "niche": n.label,
            "rank": n.rank,
            "supply": n.supply,
            "sell_through": n.sell_through,
            "demand_velocity": n.demand_velocity,
            "sold": n.sold,
            "median_sold_price": n.sold_price.median,
            "median_ask_price": n.ask_price.median,
            "score": n.score,
        }
        for n in shown
    ]
    x = {
        "field": "supply",
        "type": "quantitative",
        "title": "Listings open now (log scale)",
        "scale": {"type": "symlog", "domain": [0, x_top]},
        "axis": {"format": "d", "values": log_ticks(x_top)},
    }
    y: dict[str, Any] = {
        "field": y_field, "type": "quantitative", "title": y_title,
        "scale": {"domain": [0, y_top]},
    }  # fmt: skip
    if history:
        y["axis"] = {"format": "%", "tickCount": 5}
    spec = base("Niche map: top niches by rank", rows)
    if layout.unplaced:
        marks = " ".join(f"#{r}" for r in layout.unplaced)
        spec["title"] = {"text": spec["title"], "subtitle": f"Too crowded to label: {marks}"}
    most_sold = max((n.sold for n in shown), default=1)
    spec["layer"] = [
        _dots(x, y, history, most_sold, result.currency),
        *_label_layers(layout),
    ]
    return spec


def _dots(
    x: dict[str, Any], y: dict[str, Any], history: bool, most_sold: int, currency: str | None
) -> dict[str, Any]:
    """A circle per niche on axes `x` and `y` (size: sales, colour: median price)."""
    colour_field = "median_sold_price" if history else "median_ask_price"
    colour_title = "Median sold price" if history else "Median asking price"
    return {
        # Not "filter" (Vega-Lite's default): a niche with no sale has no median sold price,
        # and its dot would vanish while its rank label points at the spot. It is grey.
        "mark": {"type": "circle", "opacity": 0.7, "invalid": None},
        "encoding": {
            "x": x,
            "y": y,
            "size": {
                "field": "sold",
                "type": "quantitative",
                "title": "Sold",
                # A niche with no sale yet is still a dot (Vega's default draws it at 0 px²),
                # or its rank label would point at nothing.
                "scale": {"rangeMin": 25},
                "legend": {"values": count_values(most_sold), "format": "d"},
            },
            "color": {
                "condition": {"test": f"!isValid(datum.{colour_field})", "value": "#9aa0a6"},
                "field": colour_field,
                "type": "quantitative",
                "title": money_title(colour_title, currency),
                "legend": {"format": ",.0f", "gradientLength": 120, "tickCount": 3},
            },
            "tooltip": [
                {"field": "niche"},
                {"field": "rank"},
                {"field": "supply"},
                {"field": y["field"]},
                {"field": "sold"},
                {"field": colour_field},
                {"field": "score"},
            ],
        },
    }


def _label_rows(labels: tuple[Label, ...]) -> list[dict[str, Any]]:
    rows = []
    for label in labels:
        box, (dx, dy) = label.box, label.dot
        # The leader runs from the dot to the nearest point of the label's box.
        nx, ny = min(max(dx, box.left), box.right), min(max(dy, box.top), box.bottom)
        rows.append(
            {
                "ranks": list(label.ranks),
                "text": list(label.lines),
                "x": round(box.left + _PAD, 1),
                "y": round(box.top + _PAD, 1),
                "dot_x": round(dx, 1),
                "dot_y": round(dy, 1),
                "leader_x": round(nx, 1),
                "leader_y": round(ny, 1),
                "leader": label.leader,
            }
        )
    return rows


def _label_layers(layout: Layout) -> list[dict[str, Any]]:
    """The rank labels where `layout` put them, in the plot's pixels: leader lines, a white
    halo, then the text (named `rank_labels`, so a test can find it in the SVG)."""
    rows = _label_rows(layout.labels)
    if not rows:
        return []

    def px(field: str) -> dict[str, Any]:
        return {"field": field, "type": "quantitative", "scale": None}

    text = {
        "type": "text", "align": "left", "baseline": "top", "fontSize": LABEL,
        "fontWeight": "bold", "lineHeight": LABEL_LINE,
    }  # fmt: skip
    at = {"x": px("x"), "y": px("y"), "text": {"field": "text"}}
    halo = {**text, "stroke": "white", "strokeWidth": 4, "strokeOpacity": 0.9}
    layers: list[dict[str, Any]] = [
        {"name": "rank_halos", "data": {"values": rows}, "mark": halo, "encoding": at},
        {"name": "rank_labels", "data": {"values": rows}, "mark": text, "encoding": at},
    ]
    leaders = [r for r in rows if r["leader"]]
    if leaders:
        ends = {"x": px("dot_x"), "y": px("dot_y"), "x2": px("leader_x"), "y2": px("leader_y")}
        rule = {"type": "rule", "color": "#555", "strokeWidth": 1}
        layers.insert(0, {"data": {"values": leaders}, "mark": rule, "encoding": ends})
    return layers


__all__ = ["MAP_POINTS", "log_ticks", "niche_map"]
