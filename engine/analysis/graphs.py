"""The four analysis graphs as Vega-Lite v5 specs (data inline), and their SVG rendering.

`graph_specs(result)` builds all four from an `AnalysisResult` alone, so a stored or imported
analysis re-renders without the listings:

- ``niche-map``: supply, the listings open now (x, symlog: 0 is a value) vs sell-through
  (y), point size = sold, colour = median sold price, the top niches marked by rank (nearby
  marks merged: "#1 #4"). A snapshot has no sell-through: y is demand velocity.
- ``price-bands``: asking vs sold price bands for the top niches by rank (p10-p90 whisker,
  IQR bar, median tick), from precomputed quantiles.
- ``time-to-sell``: Kaplan-Meier survival curves of the top `CURVES` niches with one, by rank.
- ``market-flow``: listings new / sold / deleted per day over the window.

Niches appear in the graphs by rank ("#3"), never by their long names: the pages list the
names under the graphs. Text is sized for the width the pages show a graph at (`WIDTH`).
"""

from __future__ import annotations

import math
from typing import Any

import vl_convert

from ._niche_records import NicheStats
from ._result import AnalysisResult

GRAPH_NAMES: tuple[str, ...] = ("niche-map", "price-bands", "time-to-sell", "market-flow")
SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
_MAP_POINTS = 300
# Drawn at about 600 px wide with 13-16 px text, legends underneath: shown at 560 px or more
# (the page scrolls a narrower screen sideways rather than shrink it), no text is under 12 px.
WIDTH, HEIGHT = 520, 300
CURVES = 5  # time-to-sell curves: more cannot be told apart
# Two map labels closer than this (pixels) are merged into one ("#1 #4") instead of overlapping.
_LABEL_GAP_X, _LABEL_GAP_Y = 44.0, 16.0
_CONFIG = {
    "font": "DejaVu Sans, Helvetica, Arial, sans-serif",
    "title": {"fontSize": 16, "anchor": "start", "offset": 10},
    "axis": {"labelFontSize": 13, "titleFontSize": 14, "titlePadding": 8},
    "legend": {
        "labelFontSize": 13,
        "titleFontSize": 13,
        "orient": "bottom",
        "direction": "horizontal",
    },
    "view": {"stroke": None},
}


def _latest_v5() -> str | None:
    # Pin the renderer to the newest bundled 5.x so specs written for v5 keep rendering
    # the same now that vl-convert also bundles Vega-Lite 6.
    versions = [v for v in vl_convert.get_vegalite_versions() if v.startswith("5.")]
    if not versions:
        return None
    return max(versions, key=lambda v: tuple(int(p) for p in v.split(".") if p.isdigit()))


_VL_VERSION = _latest_v5()


def _base(title: str, rows: list[dict[str, Any]], height: int = HEIGHT) -> dict[str, Any]:
    return {
        "$schema": SCHEMA,
        "title": title,
        "width": WIDTH,
        "height": height,
        "config": _CONFIG,
        "data": {"values": rows},
    }


def _mark(rank: int) -> str:
    """How a graph names a top niche: its rank; the page lists the names under the graphs."""
    return f"#{rank}"


def _money_title(what: str, currency: str | None) -> str:
    return f"{what} ({currency})" if currency else what


def _count_values(highest: int) -> list[int]:
    """A few whole numbers from 1 to `highest` for a count legend (never "2.5 sold")."""
    return sorted({v for v in (1, highest // 4, highest // 2, highest) if v >= 1})


def map_labels(points: list[tuple[int, float, float]]) -> dict[int, str]:
    """Rank -> label for the top niches' points (rank, x px, y px), best rank first: a point
    near one already labelled joins that label ("#1 #4") rather than overlap it."""
    groups: list[tuple[float, float, list[int]]] = []
    for rank, x, y in sorted(points):
        for gx, gy, ranks in groups:
            if abs(gx - x) < _LABEL_GAP_X and abs(gy - y) < _LABEL_GAP_Y:
                ranks.append(rank)
                break
        else:
            groups.append((x, y, [rank]))
    return {ranks[0]: " ".join(_mark(r) for r in ranks) for _, _, ranks in groups}


def niche_map(result: AnalysisResult) -> dict[str, Any]:
    history = result.evidence == "history"
    top = {n.rank for n in result.top}
    shown = [n for n in result.niches[:_MAP_POINTS] if (n.sell_through is not None) or not history]
    y_field, y_title = (
        ("sell_through", "Sell-through") if history else ("demand_velocity", "Favourites per day")
    )
    supplies = [n.supply for n in shown] or [0]
    x_top = max(10.0, max(supplies) * 1.3)
    y_values = [getattr(n, y_field) or 0.0 for n in shown] or [1.0]
    y_top = 1.0 if history else max(1e-9, max(y_values) * 1.1)

    def px(n: NicheStats) -> tuple[float, float]:
        # Where Vega puts the point (symlog x, linear y), to keep the rank labels apart.
        x = WIDTH * math.log1p(n.supply) / math.log1p(x_top)
        return x, HEIGHT * (1 - (getattr(n, y_field) or 0.0) / y_top)

    labels = map_labels([(n.rank, *px(n)) for n in shown if n.rank in top])
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
            "label": labels.get(n.rank),
        }
        for n in shown
    ]
    x = {
        "field": "supply",
        "type": "quantitative",
        "title": "Listings open now: the competition (log scale)",
        "scale": {"type": "symlog", "domain": [0, x_top]},
        "axis": {"format": "d", "tickCount": 6},
    }
    y: dict[str, Any] = {
        "field": y_field, "type": "quantitative", "title": y_title,
        "scale": {"domain": [0, y_top]},
    }  # fmt: skip
    if history:
        y["axis"] = {"format": "%"}
    spec = _base("Niche map: the top niches by rank", rows)
    most_sold = max((n.sold for n in shown), default=1)
    spec["layer"] = _map_layers(x, y, history, most_sold, result.currency)
    return spec


def _map_layers(
    x: dict[str, Any], y: dict[str, Any], history: bool, most_sold: int, currency: str | None
) -> list[dict[str, Any]]:
    """The niche map's marks on axes `x` and `y`: a circle per niche (size: sales, colour:
    median price) and the rank labels of the top niches beside theirs."""
    colour_field = "median_sold_price" if history else "median_ask_price"
    return [
        {
            "mark": {"type": "circle", "opacity": 0.7},
            "encoding": {
                "x": x,
                "y": y,
                "size": {
                    "field": "sold",
                    "type": "quantitative",
                    "title": "Sold",
                    "legend": {"values": _count_values(most_sold)},
                },
                "color": {
                    "field": colour_field,
                    "type": "quantitative",
                    "title": _money_title(
                        "Median sold price" if history else "Median asking price", currency
                    ),
                    "legend": {"format": ",.0f", "gradientLength": 160},
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
        },
        {
            "mark": {
                "type": "text",
                "align": "left",
                "dx": 7,
                "dy": -7,
                "fontSize": 13,
                "fontWeight": "bold",
            },
            "transform": [{"filter": "datum.label != null"}],
            "encoding": {"x": x, "y": y, "text": {"field": "label"}},
        },
    ]


def price_bands(result: AnalysisResult) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for n in result.top:
        for kind, p in (("asking", n.ask_price), ("sold", n.sold_price)):
            if p.median is None:
                continue
            rows.append(
                {
                    "niche": n.label,
                    "key": _mark(n.rank),
                    "rank": n.rank,
                    "kind": kind,
                    "n": p.n,
                    "p10": p.p10,
                    "q1": p.q1,
                    "median": p.median,
                    "q3": p.q3,
                    "p90": p.p90,
                }
            )
    shown = len({r["rank"] for r in rows})
    y = {
        "field": "key", "type": "nominal", "sort": {"field": "rank"},
        "title": "Niche (by rank)",
    }  # fmt: skip
    offset = {"field": "kind", "type": "nominal"}
    colour = {"field": "kind", "type": "nominal", "title": "Price",
              "sort": ["asking", "sold"]}  # fmt: skip
    spec = _base("Price bands: asking vs sold", rows, height=max(120, 34 * shown))
    spec["encoding"] = {"y": y, "yOffset": offset, "color": colour}
    price = {"type": "quantitative", "title": _money_title("Price", result.currency)}
    spec["layer"] = [
        {
            "mark": {"type": "rule"},
            "encoding": {"x": {"field": "p10", **price}, "x2": {"field": "p90"}},
        },
        {
            "mark": {"type": "bar", "size": 9},
            "encoding": {"x": {"field": "q1", **price}, "x2": {"field": "q3"}},
        },
        {
            "mark": {"type": "tick", "size": 13, "thickness": 2},
            "encoding": {"x": {"field": "median", **price}, "color": {"value": "black"}},
        },
    ]
    return spec


def time_to_sell(result: AnalysisResult) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for n in [n for n in result.top if n.km_curve is not None][:CURVES]:
        assert n.km_curve is not None
        for day, s in zip(n.km_curve.days, n.km_curve.survival, strict=True):
            rows.append(
                {"niche": n.label, "key": _mark(n.rank), "rank": n.rank, "days": day, "unsold": s}
            )
    spec = _base("Time to sell: the top niches' listings still unsold", rows)
    spec["mark"] = {"type": "line", "interpolate": "step-after", "strokeWidth": 2}
    spec["encoding"] = {
        "x": {"field": "days", "type": "quantitative", "title": "Days since listed"},
        "y": {
            "field": "unsold",
            "type": "quantitative",
            "title": "Share still unsold",
            "scale": {"domain": [0, 1]},
            "axis": {"format": "%"},
        },
        "color": {
            "field": "key",
            "type": "nominal",
            "sort": {"field": "rank"},
            "title": "Niche (by rank)",
        },
    }
    return spec


def market_flow(result: AnalysisResult) -> dict[str, Any]:
    rows = [
        {"date": day.date, "flow": kind, "listings": getattr(day, kind)}
        for day in result.flow
        for kind in ("new", "sold", "deleted")
    ]
    spec = _base("Market flow: listings per day", rows)
    spec["mark"] = {"type": "line", "point": True}
    spec["encoding"] = {
        "x": {
            "field": "date", "type": "temporal", "timeUnit": "utcyearmonthdate", "title": "Day",
            "axis": {"format": "%d %b", "labelAngle": 0, "tickCount": 6},
        },
        "y": {
            "field": "listings", "type": "quantitative", "title": "Listings",
            "axis": {"format": "d", "tickMinStep": 1},
        },
        "color": {
            "field": "flow", "type": "nominal", "sort": ["new", "sold", "deleted"],
            "title": "Listings that day",
        },
    }  # fmt: skip
    return spec


def graph_specs(result: AnalysisResult) -> dict[str, dict[str, Any]]:
    """The four Vega-Lite specs by name (`GRAPH_NAMES`), each with its data inline."""
    return {
        "niche-map": niche_map(result),
        "price-bands": price_bands(result),
        "time-to-sell": time_to_sell(result),
        "market-flow": market_flow(result),
    }


def render_svg(spec: dict[str, Any]) -> str:
    """SVG text of a Vega-Lite spec, rendered in-process (no browser; external data URLs
    are refused, so rendering never touches the network). Raises ValueError on a bad spec."""
    try:
        svg = vl_convert.vegalite_to_svg(spec, vl_version=_VL_VERSION, allowed_base_urls=[])
    except Exception as err:  # vl_convert raises plain Exception/RuntimeError on bad specs
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"cannot render Vega-Lite spec: {first_line}") from err
    return str(svg)


__all__ = [
    "CURVES",
    "GRAPH_NAMES",
    "graph_specs",
    "map_labels",
    "market_flow",
    "niche_map",
    "price_bands",
    "render_svg",
    "time_to_sell",
]
