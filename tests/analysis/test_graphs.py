"""The four Vega-Lite specs (inline data, required encodings), their SVG rendering at a phone's
width, the niche map's labels and axis, and the price bands' asked prices."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import xml.etree.ElementTree as ET
from decimal import Decimal
from typing import Any

from engine.analysis import (
    CURVES,
    GRAPH_NAMES,
    AnalysisInput,
    AnalysisResult,
    analyse,
    graph_specs,
    place_labels,
    render_svg,
)
from engine.analysis.graphs import ASKED, SOLD

from .factory import NOW, History

# What a 390 px phone gives a graph (the page's and the panel's padding taken off).
PHONE_GRAPH_PX = 326
SVG = "{http://www.w3.org/2000/svg}"


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


def _layer(spec: dict[str, Any], name: str) -> dict[str, Any]:
    (layer,) = [layer for layer in spec["layer"] if layer.get("name") == name]
    return layer  # type: ignore[no-any-return]


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
    # The top niches are labelled by rank, each once (those on one spot share a label).
    labels = _layer(specs["niche-map"], "rank_labels")["data"]["values"]
    assert sorted(r for label in labels for r in label["ranks"]) == [1, 2, 3, 4]
    assert {r["kind"] for r in specs["price-bands"]["data"]["values"]} == {ASKED, SOLD}
    assert {r["key"] for r in specs["price-bands"]["data"]["values"]} <= {"#1", "#2", "#3", "#4"}
    assert specs["time-to-sell"]["mark"]["interpolate"] == "step-after"
    curves = {r["key"] for r in specs["time-to-sell"]["data"]["values"]}
    assert curves and curves <= {"#1", "#2", "#3", "#4"} and len(curves) <= CURVES
    assert {r["flow"] for r in specs["market-flow"]["data"]["values"]} == {"new", "sold", "deleted"}
    # Counts are whole numbers: the size legend's values and the flow's axis.
    size_legend = point["size"]["legend"]["values"]
    assert size_legend and all(isinstance(v, int) for v in size_legend)
    assert specs["market-flow"]["encoding"]["y"]["axis"]["format"] == "d"


def test_svg_renders_without_network() -> None:
    for spec in graph_specs(_result()).values():
        svg = render_svg(spec)
        assert svg.startswith("<svg")


def test_graph_text_reads_on_a_phone() -> None:
    # Pages draw a graph at the width of its box, 326 px on a 390 px phone: every text of
    # the rendered SVG must stay at 11 px or more once scaled to that, and the SVG scales
    # (a viewBox as wide as the SVG).
    for name, spec in graph_specs(_result()).items():
        svg = render_svg(spec)
        root = ET.fromstring(svg)
        width = float(root.attrib["width"])
        assert root.attrib["viewBox"].split()[2] == root.attrib["width"], name
        sizes = [float(v) for v in re.findall(r'font-size="([0-9.]+)px"', svg)]
        assert sizes, name
        assert min(sizes) * min(1.0, PHONE_GRAPH_PX / width) >= 11, (name, width, min(sizes))


def _texts(root: ET.Element, group_class: str) -> list[ET.Element]:
    return [
        text
        for group in root.iter(f"{SVG}g")
        if group_class in group.attrib.get("class", "").split()
        for text in group.iter(f"{SVG}text")
    ]


def _translate(element: ET.Element) -> tuple[float, float]:
    found = re.match(r"translate\(([-0-9.e]+),([-0-9.e]+)\)", element.attrib["transform"])
    assert found is not None
    return float(found.group(1)), float(found.group(2))


def test_niche_map_has_no_zero_tick_and_labels_sit_by_their_dots() -> None:
    spec = graph_specs(_result())["niche-map"]
    ticks = spec["layer"][0]["encoding"]["x"]["axis"]["values"]
    assert ticks[0] == 1 and 0 not in ticks
    root = ET.fromstring(render_svg(spec))
    axis_labels = [t.text for t in _texts(root, "role-axis-label")]
    assert "1" in axis_labels and "0" not in axis_labels, axis_labels
    # Where Vega drew each dot is where the labels were laid out from: the layout's idea of
    # the scales is Vega's.
    dots = [
        _translate(path)
        for group in root.iter(f"{SVG}g")
        if "layer_0_marks" in group.attrib.get("class", "").split()
        for path in group.iter(f"{SVG}path")
    ]
    labels = _layer(spec, "rank_labels")["data"]["values"]
    for label in labels:
        assert any(
            abs(x - label["dot_x"]) < 0.6 and abs(y - label["dot_y"]) < 0.6 for x, y in dots
        ), (label, dots[:5])
    drawn = _texts(root, "rank_labels_marks")
    assert sorted(_translate(t)[0] for t in drawn) == sorted(label["x"] for label in labels)


def _overlap(a: Any, b: Any) -> bool:
    return not (a.right <= b.left or b.right <= a.left or a.bottom <= b.top or b.bottom <= a.top)


def test_labels_on_one_spot_are_listed_together_and_none_overlap() -> None:
    # Eight top niches on one dot (sold out, all sold: the map's top left corner), two on
    # one dot nearby, one far away.
    points = [(r, 0.0, 0.0) for r in (1, 3, 4, 6, 7, 8, 9, 10)]
    points += [(2, 84.0, 18.0), (5, 86.0, 21.0), (11, 250.0, 200.0)]
    layout = place_labels(points, 290, 230, 14, 16)
    assert layout.unplaced == ()
    by_first = {label.ranks[0]: label for label in layout.labels}
    assert by_first[1].ranks == (1, 3, 4, 6, 7, 8, 9, 10)
    assert by_first[1].lines == ("#1 #3 #4 #6", "#7 #8 #9 #10")
    assert by_first[2].ranks == (2, 5) and by_first[11].ranks == (11,)
    for a, b in itertools.combinations(layout.labels, 2):
        assert not _overlap(a.box, b.box), (a, b)
    for label in layout.labels:
        box = label.box
        assert box.left >= 0 and box.top >= 0 and box.right <= 290 and box.bottom <= 230
        for other in layout.labels:  # no label hides another spot's dot
            x, y = other.dot
            assert other is label or not (box.left < x < box.right and box.top < y < box.bottom)


def test_labels_without_room_are_listed_instead_of_piled() -> None:
    # Ten distinct dots in a row across a plot too small to label them all.
    points = [(r, 8.0 + 14.0 * r, 30.0) for r in range(1, 11)]
    layout = place_labels(points, 160, 60, 14, 16)
    placed = [r for label in layout.labels for r in label.ranks]
    assert layout.unplaced and sorted(placed + list(layout.unplaced)) == list(range(1, 11))
    assert 1 in placed  # the best rank is labelled first
    for a, b in itertools.combinations(layout.labels, 2):
        assert not _overlap(a.box, b.box), (a, b)


def test_price_bands_show_what_sold_out_niches_asked_when_listed() -> None:
    # Every listing of the niche sold: none is open, so nothing asks anything now. Each was
    # first seen asking 40, and sold after a drop to 30 (its last price).
    h = History()
    for i in range(8):
        h.listing(brand="Zara", size="M", price="40.00", seen_days_ago=20, sold_days_ago=5 + i)
    h.listings[:] = [dataclasses.replace(r, price=Decimal("30.00")) for r in h.listings]
    result = analyse(AnalysisInput.from_records(h.listings, h.events, now=NOW), top_n=3)
    top = result.top[0]
    assert top.supply == 0 and top.ask_price.median is None
    assert top.listed_price is not None and top.listed_price.n == 8
    assert top.listed_price.median == 40.0 and top.sold_price.median == 30.0
    rows = graph_specs(result)["price-bands"]["data"]["values"]
    bands = {(r["key"], r["kind"]): r["median"] for r in rows}
    assert bands[("#1", ASKED)] == 40.0 and bands[("#1", SOLD)] == 30.0
    assert json.loads(json.dumps(top.to_json()))["listed_price"]["median"] == 40.0


def test_a_young_monitors_map_draws_every_niche_and_labels_each_top_one() -> None:
    # Minutes of history: one sale in ten niches. The unsold niches have no median sold price
    # (the colour) and sell-through 0 (all on the bottom edge), and each is still a dot.
    h = History()
    for b, brand in enumerate(("Nike", "Zara", "Adidas", "Mango", "Levi", "Uniqlo", "Gap")):
        for i in range(4 + 3 * b):
            sold = 0.05 if b == 0 and i == 0 else None
            h.listing(brand=brand, size=None, seen_days_ago=0.1, sold_days_ago=sold)
    result = analyse(AnalysisInput.from_records(h.listings, h.events, now=NOW), top_n=7)
    spec = graph_specs(result)["niche-map"]
    root = ET.fromstring(render_svg(spec))
    dots = [
        path
        for group in root.iter(f"{SVG}g")
        if "layer_0_marks" in group.attrib.get("class", "").split()
        for path in group.iter(f"{SVG}path")
    ]
    assert len(dots) == len(spec["data"]["values"]) >= 7
    labels = _layer(spec, "rank_labels")["data"]["values"]
    assert sorted(r for label in labels for r in label["ranks"]) == list(range(1, 8))
    assert "subtitle" not in json.dumps(spec["title"])


def test_a_graph_stored_before_is_drawn_for_a_phone_too() -> None:
    # The niche map as analyses stored it before the graphs were drawn for a phone: 520 px
    # plot, 13 px text, a long axis title and a "0" tick. It is drawn in today's size.
    x = {
        "field": "supply", "type": "quantitative",
        "title": "Listings open now: the competition (log scale)",
        "scale": {"type": "symlog", "domain": [0, 10.4]}, "axis": {"format": "d", "tickCount": 6},
    }  # fmt: skip
    y = {"field": "sell_through", "type": "quantitative", "scale": {"domain": [0, 1]}}
    old = {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": "Niche map: the top niches by rank",
        "width": 520,
        "height": 300,
        "config": {"axis": {"labelFontSize": 13}, "legend": {"labelFontSize": 13}},
        "data": {"values": [{"supply": 0, "sell_through": 1.0, "sold": 5, "label": "#1 #2"}]},
        "layer": [
            {"mark": "circle", "encoding": {"x": x, "y": y, "size": {"field": "sold"}}},
            {
                "mark": {"type": "text", "dx": 7, "fontSize": 13, "fontWeight": "bold"},
                "encoding": {"x": x, "y": y, "text": {"field": "label"}},
            },
        ],
    }
    svg = render_svg(old)
    root = ET.fromstring(svg)
    width = float(root.attrib["width"])
    smallest = min(float(v) for v in re.findall(r'font-size="([0-9.]+)px"', svg))
    assert smallest * min(1.0, PHONE_GRAPH_PX / width) >= 11, (width, smallest)
    assert "0" not in [t.text for t in _texts(root, "role-axis-label")]
    assert old["width"] == 520  # the stored spec itself is left alone
