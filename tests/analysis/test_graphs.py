"""The four Vega-Lite specs (inline data, required encodings) and their SVG rendering."""

from __future__ import annotations

import json
import re

from engine.analysis import (
    CURVES,
    GRAPH_NAMES,
    AnalysisInput,
    AnalysisResult,
    analyse,
    graph_specs,
    map_labels,
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
    # The top niches are marked by rank, each once (nearby ones share a label, never overlap).
    labels = [r["label"] for r in specs["niche-map"]["data"]["values"] if r["label"]]
    assert sorted(" ".join(labels).split()) == ["#1", "#2", "#3", "#4"]
    assert {r["kind"] for r in specs["price-bands"]["data"]["values"]} == {"asking", "sold"}
    assert {r["key"] for r in specs["price-bands"]["data"]["values"]} <= {"#1", "#2", "#3", "#4"}
    assert specs["time-to-sell"]["mark"]["interpolate"] == "step-after"
    curves = {r["key"] for r in specs["time-to-sell"]["data"]["values"]}
    assert curves and curves <= {"#1", "#2", "#3", "#4"} and len(curves) <= CURVES
    assert {r["flow"] for r in specs["market-flow"]["data"]["values"]} == {"new", "sold", "deleted"}
    # Counts are whole numbers: the size legend's values and the flow's axis.
    size_legend = point["size"]["legend"]["values"]
    assert size_legend and all(isinstance(v, int) for v in size_legend)
    assert specs["market-flow"]["encoding"]["y"]["axis"]["format"] == "d"


def test_map_labels_merge_what_would_overlap() -> None:
    labels = map_labels([(3, 100.0, 50.0), (1, 102.0, 55.0), (2, 400.0, 50.0), (4, 101.0, 200.0)])
    assert labels == {1: "#1 #3", 2: "#2", 4: "#4"}


def test_graph_text_reads_at_the_width_pages_show_it() -> None:
    # Pages show a graph at 560 px or wider (narrower screens scroll it sideways), so every
    # text of the rendered SVG must stay at 12 px or more once scaled to 560 px.
    for name, spec in graph_specs(_result()).items():
        svg = render_svg(spec)
        width = float(re.search(r'<svg[^>]* width="([0-9.]+)"', svg).group(1))  # type: ignore[union-attr]
        sizes = [float(v) for v in re.findall(r'font-size="([0-9.]+)px"', svg)]
        assert sizes, name
        assert min(sizes) * min(1.0, 560 / width) >= 11.5, (name, width, min(sizes))


def test_svg_renders_without_network() -> None:
    for spec in graph_specs(_result()).values():
        svg = render_svg(spec)
        assert svg.startswith("<svg")
