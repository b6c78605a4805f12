"""Graphs stored before they were drawn for a phone, drawn in today's size and text.

An analysis keeps the Vega-Lite specs it was stored with. Those of before (`_OLD_WIDTH` px
plots, 13 px text, long titles, a "0" tick on the niche map's log axis) would be drawn at
about 7 px in a phone's 326, now that pages scale a graph to its box instead of scrolling it
sideways. `restyled` gives such a spec today's size, text and titles, and the niche map its
1-2-5 ticks, leaving its data and marks alone (its merged rank labels stay beside their dots,
placed in data units). Today's specs come back as they are.
"""

from __future__ import annotations

from typing import Any

from ._graph_map import log_ticks
from ._graph_style import CONFIG, HEIGHT, LABEL, WIDTH

_OLD_WIDTH, _OLD_HEIGHT = 520, 300
# Old title -> today's: a long title widens the whole SVG, and with it shrinks its text.
_TITLES = {
    "Niche map: the top niches by rank": "Niche map: top niches by rank",
    "Time to sell: the top niches' listings still unsold": "Time to sell: share unsold",
}
_OLD_SUPPLY_TITLE = "Listings open now: the competition (log scale)"


def restyled(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` in today's size and text if it was stored before they changed (module doc)."""
    if spec.get("width") != _OLD_WIDTH:
        return spec
    title = spec.get("title")
    out = {
        **spec,
        "title": _TITLES.get(title, title) if isinstance(title, str) else title,
        "width": WIDTH,
        "height": HEIGHT if spec.get("height") == _OLD_HEIGHT else spec.get("height"),
        "config": CONFIG,
    }
    if isinstance(spec.get("layer"), list):
        out["layer"] = [_layer(layer) for layer in spec["layer"]]
    return out


def _layer(layer: Any) -> Any:
    """A niche map layer with today's competition axis and label size."""
    if not isinstance(layer, dict):
        return layer
    out = dict(layer)
    mark = layer.get("mark")
    if isinstance(mark, dict) and mark.get("type") == "text" and "fontSize" in mark:
        out["mark"] = {**mark, "fontSize": LABEL}
    encoding = layer.get("encoding")
    if not isinstance(encoding, dict):
        return out
    x = encoding.get("x")
    if isinstance(x, dict) and x.get("title") == _OLD_SUPPLY_TITLE:
        domain = x.get("scale", {}).get("domain", [0, 10])
        axis = {"format": "d", "values": log_ticks(float(domain[-1]))}
        out["encoding"] = {
            **encoding, "x": {**x, "title": "Listings open now (log scale)", "axis": axis},
        }  # fmt: skip
    return out


__all__ = ["restyled"]
