"""The four Vega-Lite specs (inline data, required encodings) and their SVG rendering."""

from __future__ import annotations

import json

from engine.analysis import (
    GRAPH_NAMES,
    AnalysisInput,
    AnalysisResult,
    analyse,
    graph_specs,
    render_svg,
)

from .factory import NOW, History


def _result() -> AnalysisResult:
    h = History()
    for brand, rate in (("Nike", 3), ("Zara", 6), ("Levi", 10)):
        for size in ("S", "M"):
            for i in range(12):
                sold = 1.0 + 2 * i if i % rate == 0 or i < 12 // rate else None
                h.listing(
                    brand=brand,
                    size=size,
                    price=f"{15 + i}.00",
                    favourites=i,
                    listed_days_ago=28,
                    seen_days_ago=28,
                    sold_days_ago=sold,
                )
    return analyse(AnalysisInput.from_records(h.listings, h.events, now=NOW), top_n=4)


def test_specs_have_names_inline_data_and_encodings() -> None:
    specs = graph_specs(_result())
    assert (
        tuple(specs) == GRAPH_NAMES == ("niche-map", "price-bands", "time-to-sell", "market-flow")
    )
    for spec in specs.values():
        assert spec["$schema"].endswith("/vega-lite/v5.json")
        assert spec["data"]["values"], "data must be inline and non-empty"
        json.dumps(spec, allow_nan=False)
    point = specs["niche-map"]["layer"][0]["encoding"]
    assert point["x"]["field"] == "supply" and point["y"]["field"] == "sell_through"
    assert point["size"]["field"] == "sold" and point["color"]["field"] == "median_sold_price"
    labels = [r["label"] for r in specs["niche-map"]["data"]["values"] if r["label"]]
    assert len(labels) == 4
    assert {r["kind"] for r in specs["price-bands"]["data"]["values"]} == {"ask", "sold"}
    assert specs["time-to-sell"]["mark"]["interpolate"] == "step-after"
    assert {r["niche"] for r in specs["time-to-sell"]["data"]["values"]} <= set(labels)
    assert {r["flow"] for r in specs["market-flow"]["data"]["values"]} == {"new", "sold", "deleted"}


def test_svg_renders_without_network() -> None:
    for spec in graph_specs(_result()).values():
        svg = render_svg(spec)
        assert svg.startswith("<svg")
