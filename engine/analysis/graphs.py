"""The four analysis graphs as Vega-Lite v5 specs (data inline), and their SVG rendering.

`graph_specs(result)` builds all four from an `AnalysisResult` alone, so a stored or imported
analysis re-renders without the listings:

- ``niche-map``: supply (x, log) vs sell-through (y), point size = sold, colour = median sold
  price, the top niches labelled. A snapshot has no sell-through: y is demand velocity.
- ``price-bands``: ask vs sold price bands for the top niches (p10-p90 whisker, IQR bar,
  median tick), from precomputed quantiles.
- ``time-to-sell``: Kaplan-Meier survival curves of the top niches, as step lines.
- ``market-flow``: listings new / sold / deleted per day over the window.
"""

from __future__ import annotations

from typing import Any

import vl_convert

from ._result import AnalysisResult

GRAPH_NAMES: tuple[str, ...] = ("niche-map", "price-bands", "time-to-sell", "market-flow")
SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
_MAP_POINTS = 300


def _latest_v5() -> str | None:
    # Pin the renderer to the newest bundled 5.x so specs written for v5 keep rendering
    # the same now that vl-convert also bundles Vega-Lite 6.
    versions = [v for v in vl_convert.get_vegalite_versions() if v.startswith("5.")]
    if not versions:
        return None
    return max(versions, key=lambda v: tuple(int(p) for p in v.split(".") if p.isdigit()))


_VL_VERSION = _latest_v5()


def _base(title: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "$schema": SCHEMA,
        "title": title,
        "width": 560,
        "height": 320,
        "data": {"values": rows},
    }


def niche_map(result: AnalysisResult) -> dict[str, Any]:
    history = result.evidence == "history"
    top = {n.rank for n in result.top}
    rows = [
        {
            "niche": n.label,
            "rank": n.rank,
            "supply": max(n.supply, 1),
            "sell_through": n.sell_through,
            "demand_velocity": n.demand_velocity,
            "sold": n.sold,
            "median_sold_price": n.sold_price.median,
            "median_ask_price": n.ask_price.median,
            "score": n.score,
            "label": n.label if n.rank in top else None,
        }
        for n in result.niches[:_MAP_POINTS]
        if (n.sell_through is not None) or not history
    ]
    y_field, y_title = (
        ("sell_through", "Sell-through") if history else ("demand_velocity", "Favourites/day")
    )
    colour_field = "median_sold_price" if history else "median_ask_price"
    x = {"field": "supply", "type": "quantitative", "scale": {"type": "log"}, "title": "Supply"}
    y: dict[str, Any] = {"field": y_field, "type": "quantitative", "title": y_title}
    if history:
        y["axis"] = {"format": "%"}
    spec = _base("Niche map", rows)
    spec["layer"] = [
        {
            "mark": {"type": "circle", "opacity": 0.7},
            "encoding": {
                "x": x,
                "y": y,
                "size": {"field": "sold", "type": "quantitative", "title": "Sold"},
                "color": {
                    "field": colour_field,
                    "type": "quantitative",
                    "title": "Median sold price" if history else "Median ask",
                },
                "tooltip": [
                    {"field": "niche"},
                    {"field": "rank"},
                    {"field": "supply"},
                    {"field": y_field},
                    {"field": "sold"},
                    {"field": colour_field},
                    {"field": "score"},
                ],
            },
        },
        {
            "mark": {"type": "text", "align": "left", "dx": 6, "fontSize": 9},
            "transform": [{"filter": "datum.label != null"}],
            "encoding": {"x": x, "y": y, "text": {"field": "label"}},
        },
    ]
    return spec


def price_bands(result: AnalysisResult) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for n in result.top:
        for kind, p in (("ask", n.ask_price), ("sold", n.sold_price)):
            if p.median is None:
                continue
            rows.append(
                {
                    "niche": n.label,
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
    y = {"field": "niche", "type": "nominal", "sort": {"field": "rank"}, "title": None}
    offset = {"field": "kind", "type": "nominal"}
    colour = {"field": "kind", "type": "nominal", "title": "Price"}
    spec = _base("Price bands: ask vs sold", rows)
    spec["encoding"] = {"y": y, "yOffset": offset, "color": colour}
    spec["layer"] = [
        {
            "mark": {"type": "rule"},
            "encoding": {
                "x": {"field": "p10", "type": "quantitative", "title": "Price"},
                "x2": {"field": "p90"},
            },
        },
        {
            "mark": {"type": "bar", "size": 8},
            "encoding": {"x": {"field": "q1", "type": "quantitative"}, "x2": {"field": "q3"}},
        },
        {
            "mark": {"type": "tick", "size": 12, "thickness": 2},
            "encoding": {
                "x": {"field": "median", "type": "quantitative"},
                "color": {"value": "black"},
            },
        },
    ]
    return spec


def time_to_sell(result: AnalysisResult) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for n in result.top:
        if n.km_curve is None:
            continue
        for day, s in zip(n.km_curve.days, n.km_curve.survival, strict=True):
            rows.append({"niche": n.label, "rank": n.rank, "days": day, "unsold": s})
    spec = _base("Time to sell (Kaplan-Meier)", rows)
    spec["mark"] = {"type": "line", "interpolate": "step-after"}
    spec["encoding"] = {
        "x": {"field": "days", "type": "quantitative", "title": "Days since listed"},
        "y": {
            "field": "unsold",
            "type": "quantitative",
            "title": "Share still unsold",
            "scale": {"domain": [0, 1]},
            "axis": {"format": "%"},
        },
        "color": {"field": "niche", "type": "nominal", "sort": {"field": "rank"}},
    }
    return spec


def market_flow(result: AnalysisResult) -> dict[str, Any]:
    rows = [
        {"date": day.date, "flow": kind, "listings": getattr(day, kind)}
        for day in result.flow
        for kind in ("new", "sold", "deleted")
    ]
    spec = _base("Market flow per day", rows)
    spec["mark"] = {"type": "line", "point": True}
    spec["encoding"] = {
        "x": {"field": "date", "type": "temporal", "timeUnit": "utcyearmonthdate", "title": "Day"},
        "y": {"field": "listings", "type": "quantitative", "title": "Listings"},
        "color": {"field": "flow", "type": "nominal", "sort": ["new", "sold", "deleted"]},
    }
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
    "GRAPH_NAMES",
    "graph_specs",
    "market_flow",
    "niche_map",
    "price_bands",
    "render_svg",
    "time_to_sell",
]
