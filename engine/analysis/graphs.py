"""The four analysis graphs as Vega-Lite v5 specs (data inline), and their SVG rendering.

`graph_specs(result)` builds all four from an `AnalysisResult` alone, so a stored or imported
analysis re-renders without the listings:

- ``niche-map`` (`_graph_map`): supply, the listings open now (x, symlog: 0 is a value, the
  left edge) vs sell-through (y), point size = sold, colour = median sold price, the top
  niches labelled by rank where no label overlaps another (`_graph_labels`). A snapshot has
  no sell-through: y is demand velocity.
- ``price-bands``: what the top niches' listings asked when first seen vs what they sold for
  (p10-p90 whisker, IQR bar, median tick), from precomputed quantiles. Asked when first seen,
  not asked now: a niche that sold out has no open listing to ask anything, and it is exactly
  the niche worth pricing.
- ``time-to-sell``: Kaplan-Meier survival curves of the top `CURVES` niches with one, by rank.
- ``market-flow``: listings new / sold / deleted per day over the window.

Niches appear in the graphs by rank ("#3"), never by their long names: the pages list the
names under the graphs. Sizes and text are in `_graph_style` (drawn for a phone's width).
"""

from __future__ import annotations

from typing import Any

import vl_convert

from ._graph_legacy import restyled
from ._graph_map import niche_map
from ._graph_style import base, mark, money_title
from ._niche_records import PriceSummary
from ._result import AnalysisResult

GRAPH_NAMES: tuple[str, ...] = ("niche-map", "price-bands", "time-to-sell", "market-flow")
CURVES = 5  # time-to-sell curves: more cannot be told apart


def _latest_v5() -> str | None:
    # Pin the renderer to the newest bundled 5.x so specs written for v5 keep rendering
    # the same now that vl-convert also bundles Vega-Lite 6.
    versions = [v for v in vl_convert.get_vegalite_versions() if v.startswith("5.")]
    if not versions:
        return None
    return max(versions, key=lambda v: tuple(int(p) for p in v.split(".") if p.isdigit()))


_VL_VERSION = _latest_v5()


ASKED, SOLD = "asked when listed", "sold for"


def _bands(result: AnalysisResult) -> list[dict[str, Any]]:
    """A row per top niche and kind of price (asked when first seen, sold for) with prices."""
    rows: list[dict[str, Any]] = []
    for n in result.top:
        # What it asks now stands in only for a niche stored without what it asked at first.
        asked = n.listed_price if n.listed_price is not None else n.ask_price
        for kind, p in ((ASKED, asked), (SOLD, n.sold_price)):
            if p.median is None:
                continue
            rows.append(
                {
                    "niche": n.label,
                    "key": mark(n.rank),
                    "rank": n.rank,
                    "kind": kind,
                    **_quantiles(p),
                }
            )
    return rows


def _quantiles(p: PriceSummary) -> dict[str, Any]:
    return {"n": p.n, "p10": p.p10, "q1": p.q1, "median": p.median, "q3": p.q3, "p90": p.p90}


def price_bands(result: AnalysisResult) -> dict[str, Any]:
    rows = _bands(result)
    shown = len({r["rank"] for r in rows})
    y = {
        "field": "key", "type": "nominal", "sort": {"field": "rank"},
        "title": "Niche (by rank)",
    }  # fmt: skip
    offset = {"field": "kind", "type": "nominal", "sort": [ASKED, SOLD]}
    colour = {
        "field": "kind", "type": "nominal", "title": "Price", "sort": [ASKED, SOLD],
        "legend": {"symbolType": "square"},
    }  # fmt: skip
    spec = base("Price bands: asked vs sold", rows, height=max(120, 34 * shown))
    spec["encoding"] = {"y": y, "yOffset": offset, "color": colour}
    # Not from 0: the bands sit between a few and a few hundred, and 0 would squeeze them.
    price = {
        "type": "quantitative", "title": money_title("Price", result.currency),
        "scale": {"zero": False},
    }  # fmt: skip
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
                {"niche": n.label, "key": mark(n.rank), "rank": n.rank, "days": day, "unsold": s}
            )
    spec = base("Time to sell: share unsold", rows)
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
    spec = base("Market flow: listings per day", rows)
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
    are refused, so rendering never touches the network); a graph stored before the graphs
    were drawn for a phone is drawn in today's size and text (`restyled`). Raises ValueError
    on a bad spec."""
    try:
        svg = vl_convert.vegalite_to_svg(
            restyled(spec), vl_version=_VL_VERSION, allowed_base_urls=[]
        )
    except Exception as err:  # vl_convert raises plain Exception/RuntimeError on bad specs
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"cannot render Vega-Lite spec: {first_line}") from err
    return str(svg)


__all__ = [
    "CURVES",
    "GRAPH_NAMES",
    "graph_specs",
    "market_flow",
    "niche_map",
    "price_bands",
    "render_svg",
    "time_to_sell",
]
