"""What a person checks of the graphs on a page, measured in Chromium as the page draws them.

A graph is an `<img>` of an SVG, whose insides the page's DOM cannot reach; so each graph's
SVG is fetched again and drawn inline, off-screen, at the width the `<img>` has on the page
(its viewBox scales it exactly as the image is scaled), and measured there: the rendered size
of every text (computed font size times the drawing's scale), the boxes of the niche map's
rank labels, and the price bands' bars.
"""

from __future__ import annotations

from typing import Any

from tests.web._phone_checks import too_wide

MIN_TEXT_PX = 11.0  # the smallest text a graph may show, once drawn on the page
ASKED = "asked when listed"  # the price bands' asked band (engine/analysis/graphs.py)

# Returns, per graph on the page: its name, the image's width on the page and its own width,
# the smallest text drawn (px), the niche map's rank labels' boxes, and the price bands'
# bars (their aria-labels: "...; Niche (by rank): #1; ...; kind: asked when listed; ...").
_MEASURE = """async () => {
  const out = [];
  for (const figure of document.querySelectorAll('figure.graph')) {
    const img = figure.querySelector('img');
    if (!img) continue;
    const text = await (await fetch(img.getAttribute('src'))).text();
    const svg = new DOMParser().parseFromString(text, 'image/svg+xml').documentElement;
    const holder = document.createElement('div');
    holder.style.cssText = `position:absolute;left:-10000px;top:0;width:${img.clientWidth}px`;
    svg.setAttribute('width', '100%');
    svg.removeAttribute('height');
    holder.appendChild(document.importNode(svg, true));
    document.body.appendChild(holder);
    const drawn = holder.querySelector('svg');
    const sizes = [...drawn.querySelectorAll('text')]
      .filter(t => t.textContent.trim())
      .map(t => {
        // The drawing's scale, rotation aside (an axis title turned upright has a = 0).
        const m = t.getScreenCTM();
        return parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
      });
    const box = r => [r.left, r.top, r.right, r.bottom];
    out.push({
      name: figure.dataset.graph,
      shown: img.clientWidth,
      natural: img.naturalWidth,
      smallest: Math.min(...sizes),
      labels: [...drawn.querySelectorAll('.rank_labels_marks text')]
        .map(t => ({text: t.textContent, box: box(t.getBoundingClientRect())})),
      bars: [...drawn.querySelectorAll('[aria-roledescription="bar"]')]
        .map(b => b.getAttribute('aria-label') || ''),
    });
    holder.remove();
  }
  return out;
}"""


def graphs_drawn(page: Any) -> list[dict[str, Any]]:
    """Each graph of the page once its image has loaded, measured as drawn (module doc)."""
    page.wait_for_function(
        "() => [...document.querySelectorAll('figure.graph img')]"
        ".every(img => img.complete && img.naturalWidth > 0)"
    )
    graphs: list[dict[str, Any]] = page.evaluate(_MEASURE)
    return graphs


def _overlap(a: list[float], b: list[float]) -> bool:
    # Boxes as [left, top, right, bottom]; touching edges (rounding) are not an overlap.
    return not (
        a[2] <= b[0] + 0.5 or b[2] <= a[0] + 0.5 or a[3] <= b[1] + 0.5 or b[3] <= a[1] + 0.5
    )


def overlapping_labels(graph: dict[str, Any]) -> list[tuple[str, str]]:
    """Pairs of the niche map's rank labels whose drawn boxes overlap."""
    labels = graph["labels"]
    return [
        (a["text"], b["text"])
        for i, a in enumerate(labels)
        for b in labels[i + 1 :]
        if _overlap(a["box"], b["box"])
    ]


def ranks_without_asked_band(graph: dict[str, Any], ranks: range) -> list[int]:
    """Of `ranks`, those the price bands draw no asked band (bar) for."""
    return [
        r
        for r in ranks
        if not any(
            f"Niche (by rank): #{r};" in bar and f"kind: {ASKED}" in bar for bar in graph["bars"]
        )
    ]


def assert_graphs_fit(page: Any, *, top: int = 5) -> dict[str, float]:
    """The page's four graphs fit the viewport (nothing wider than it), read (no text under
    `MIN_TEXT_PX`), label each top niche once without overlap, and show an asked band for
    each of the `top` best niches. Returns each graph's smallest text (px) as drawn."""
    assert too_wide(page) == [], too_wide(page)
    graphs = {g["name"]: g for g in graphs_drawn(page)}
    assert set(graphs) == {"niche-map", "price-bands", "time-to-sell", "market-flow"}, graphs
    width = page.evaluate("document.documentElement.clientWidth")
    for name, graph in graphs.items():
        assert graph["shown"] <= width, (name, graph["shown"], width)
        assert graph["smallest"] >= MIN_TEXT_PX, (name, graph["smallest"], graph["shown"])
    niche_map = graphs["niche-map"]
    assert niche_map["labels"], "the niche map labels no niche"
    assert overlapping_labels(niche_map) == [], overlapping_labels(niche_map)
    assert ranks_without_asked_band(graphs["price-bands"], range(1, top + 1)) == []
    return {name: round(graph["smallest"], 1) for name, graph in graphs.items()}
