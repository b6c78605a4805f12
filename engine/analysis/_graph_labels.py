"""Where the niche map writes its rank labels ("#3") so that no two overlap.

Vega-Lite draws a text mark where it is told and never moves it, so the layout is decided here,
in the plot's own pixels: the map's scales are fixed (explicit domains, no "nice"), so a
niche's dot is at a position known before Vega draws it.

- Top niches on the same spot (the same dot, or dots closer than `SAME_SPOT` px) share one
  label that lists them, a few ranks per line ("#1 #3 #4 #6" over "#7 #8"): eight labels on
  one dot would otherwise be drawn on top of each other.
- Each label, best rank first, takes the first place around its dot (right, left, above,
  below; then farther out, with a leader line back to the dot) where its box stays inside the
  plot and overlaps no label placed before it and no other top niche's dot.
- A label with no room anywhere is left off the map and listed instead (`Layout.unplaced`),
  so the graph names it in words rather than cover another label.

Text widths are estimated from DejaVu Sans Bold's advances, the widest of the fonts the graphs
name, so a browser that draws the labels in a narrower one only leaves more space between them.
"""

from __future__ import annotations

from dataclasses import dataclass

# Dots closer than this (px) are one spot: their niches share a label.
SAME_SPOT = 6.0
RANKS_PER_LINE = 4
# Room kept between a dot's centre and its label (the biggest dot's radius is about 9 px).
GAP = 9.0
# How far out a label may go from its dot, as multiples of `GAP`; past the first, a leader
# line joins them. Far enough to reach the empty half of a plot whose dots sit along one edge
# (a young monitor: every niche at 0% sell-through).
RINGS = (1.0, 2.2, 3.6, 5.2, 7.2, 9.6, 12.4)
# DejaVu Sans Bold advances, in ems: what a rank label is made of.
_ADVANCE = {"#": 0.838, " ": 0.348}
_DIGIT, _OTHER = 0.696, 0.75
_PAD = 2.0  # px around a label's text that another label keeps clear of


@dataclass(frozen=True, slots=True)
class Box:
    left: float
    top: float
    width: float
    height: float

    @property
    def right(self) -> float:
        return self.left + self.width

    @property
    def bottom(self) -> float:
        return self.top + self.height

    def overlaps(self, other: Box) -> bool:
        return not (
            self.right <= other.left
            or other.right <= self.left
            or self.bottom <= other.top
            or other.bottom <= self.top
        )


@dataclass(frozen=True, slots=True)
class Label:
    """One label on the map: the ranks it names, its lines, its box (text top-left at the
    box's top-left), its dot, and whether a leader line joins them (placed away from it)."""

    ranks: tuple[int, ...]
    lines: tuple[str, ...]
    box: Box
    dot: tuple[float, float]
    leader: bool


@dataclass(frozen=True, slots=True)
class Layout:
    labels: tuple[Label, ...]
    unplaced: tuple[int, ...]  # ranks with no room on the map, best first


def text_width(text: str, font_size: float) -> float:
    """A generous estimate of `text`'s width in px, in bold at `font_size`."""
    ems = sum(_ADVANCE.get(c, _DIGIT if c.isdigit() else _OTHER) for c in text)
    return ems * font_size


def _spots(points: list[tuple[int, float, float]]) -> list[tuple[list[int], float, float]]:
    """Top niches grouped by spot, best rank first: (ranks, x, y of the best one's dot)."""
    spots: list[tuple[list[int], float, float]] = []
    for rank, x, y in sorted(points):
        for ranks, sx, sy in spots:
            if abs(sx - x) <= SAME_SPOT and abs(sy - y) <= SAME_SPOT:
                ranks.append(rank)
                break
        else:
            spots.append(([rank], x, y))
    return spots


def _lines(ranks: list[int]) -> tuple[str, ...]:
    marks = [f"#{r}" for r in ranks]
    return tuple(
        " ".join(marks[i : i + RANKS_PER_LINE]) for i in range(0, len(marks), RANKS_PER_LINE)
    )


def _dot(x: float, y: float) -> Box:
    """The middle of another top niche's dot, which no label may cover."""
    r = SAME_SPOT / 2
    return Box(x - r, y - r, 2 * r, 2 * r)


def _candidates(x: float, y: float, w: float, h: float) -> list[tuple[Box, bool]]:
    """Boxes of size w x h around the dot at (x, y), nearest first: right, left, above and
    below at each ring; whether the box needs a leader line to its dot."""
    out: list[tuple[Box, bool]] = []
    for ring in RINGS:
        d = GAP * ring
        for left, top in (
            (x + d * 0.7, y - d * 0.7 - h),  # above right
            (x + d * 0.7, y + d * 0.7),  # below right
            (x + d, y - h / 2),  # right
            (x - d * 0.7 - w, y - d * 0.7 - h),  # above left
            (x - d * 0.7 - w, y + d * 0.7),  # below left
            (x - d - w, y - h / 2),  # left
            (x - w / 2, y - d - h),  # above
            (x - w / 2, y + d),  # below
        ):
            out.append((Box(left, top, w, h), ring > RINGS[0]))
    return out


def place_labels(
    points: list[tuple[int, float, float]],
    width: float,
    height: float,
    font_size: float,
    line_height: float,
) -> Layout:
    """Labels for the top niches' dots (`points`: rank, x px, y px in a plot `width` x
    `height`), none overlapping another or another top niche's dot (module doc)."""
    spots = _spots(points)
    placed: list[Label] = []
    unplaced: list[int] = []
    for ranks, x, y in spots:
        lines = _lines(ranks)
        w = max(text_width(line, font_size) for line in lines) + 2 * _PAD
        h = line_height * len(lines) + 2 * _PAD
        others = [(ox, oy) for rs, ox, oy in spots if rs is not ranks]
        for box, leader in _candidates(x, y, w, h):
            inside = box.left >= 0 and box.top >= 0 and box.right <= width and box.bottom <= height
            if (
                inside
                and not any(box.overlaps(p.box) for p in placed)
                and not any(box.overlaps(_dot(ox, oy)) for ox, oy in others)
            ):
                placed.append(Label(tuple(ranks), lines, box, (x, y), leader))
                break
        else:
            unplaced.extend(ranks)
    return Layout(tuple(placed), tuple(sorted(unplaced)))


__all__ = ["Box", "Label", "Layout", "place_labels", "text_width"]
