"""What the simulated marketplace sells: categories, the brands and size system of each, the
price level of each category, and the conditions.

A category has its own sizes (letter sizes for clothing, shoe sizes for shoes, none for bags
and games) and its own brands (no "Games · Carhartt", no "Coats · size 43"): the demo is read
by people who know the market, and a niche that cannot exist undoes every other figure beside
it. Sizes and conditions are drawn with weights, as on the real site (M is commoner than XS,
"Very good" than "Satisfactory"), which also keeps exact niches (category, brand, size,
condition) populated enough for the analysis to stand on them.

Niche median prices are drawn within the category's `prices`; every range lies within 10-70 so
that a planted hot niche still outsells an ordinary one per listing-day (the accuracy tests'
precision@10 rests on that), while hot niches of different categories sit at different price
levels.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Category:
    """One category: `name` in titles, `path` as item pages name it, `sizes` (size id, weight)
    or none, `brands` (ids) that sell in it, `prices` the range of its niches' median prices."""

    id: int
    name: str
    path: str
    sizes: tuple[tuple[int, float], ...]
    brands: tuple[int, ...]
    prices: tuple[int, int]


SIZES: tuple[tuple[int, str], ...] = (
    (204, "XS"), (205, "S"), (206, "M"), (207, "L"), (208, "XL"),
    (1197, "40"), (1198, "41"), (1199, "42"), (1200, "43"), (1201, "44"), (1202, "45"),
)  # fmt: skip
LETTER_SIZES: tuple[tuple[int, float], ...] = ((204, 1.0), (205, 3.0), (206, 4.0), (207, 3.0),
                                               (208, 1.5))  # fmt: skip
SHOE_SIZES: tuple[tuple[int, float], ...] = ((1197, 1.0), (1198, 2.0), (1199, 3.0), (1200, 3.0),
                                             (1201, 2.0), (1202, 1.0))  # fmt: skip
NO_SIZES: tuple[tuple[int, float], ...] = ()

CONDITIONS: tuple[tuple[int, str], ...] = (
    (6, "New with tags"), (1, "New without tags"), (2, "Very good"), (3, "Good"),
    (4, "Satisfactory"),
)  # fmt: skip
CONDITION_WEIGHTS: tuple[float, ...] = (1.5, 1.5, 4.0, 3.0, 1.0)  # in CONDITIONS' order

BRANDS: tuple[tuple[int, str], ...] = (
    (53, "Levi's"), (14, "Nike"), (12, "Zara"), (88, "H&M"), (304, "Adidas"), (73, "Mango"),
    (1565, "Carhartt"), (2319, "Patagonia"), (162, "Ralph Lauren"), (255, "Uniqlo"),
    (161, "Diesel"), (1798, "Lee"), (315, "Wrangler"), (1261, "Pepe Jeans"),
    (94, "Tommy Hilfiger"), (2703, "The North Face"), (3541, "Columbia"),
    (1456, "Massimo Dutti"), (1775, "New Balance"), (139, "Vans"), (11445, "Converse"),
    (535, "Puma"), (1195, "Asics"), (1473, "Reebok"), (27092, "Veja"), (8715, "Salomon"),
    (4838, "Arket"), (365, "Sézane"), (4783, "Shein"), (1329, "Vero Moda"), (89162, "Lego"),
    (5827, "Hasbro"), (3916, "Mattel"), (9813, "Ravensburger"), (8131, "Playmobil"),
    (67503, "Nintendo"), (1287, "Asmodee"), (4327, "VTech"), (22771, "Djeco"),
    (4063, "Fisher-Price"), (6289, "Longchamp"), (1209, "Michael Kors"), (10213, "Eastpak"),
    (15347, "Fjällräven"), (1113, "Guess"), (2341, "Coach"), (35631, "Herschel"),
    (7029, "Kipling"),
)  # fmt: skip

CATALOGUE: tuple[Category, ...] = (
    Category(1904, "Jeans", "Women › Clothing › Jeans", LETTER_SIZES,
             (53, 12, 88, 73, 161, 1798, 315, 1261, 94, 1565), (15, 50)),
    Category(1206, "Coats", "Women › Clothing › Coats", LETTER_SIZES,
             (12, 88, 73, 255, 2319, 2703, 3541, 1456, 162, 1565), (30, 70)),
    Category(257, "Sneakers", "Men › Shoes › Sneakers", SHOE_SIZES,
             (14, 304, 1775, 139, 11445, 535, 1195, 1473, 27092, 8715), (25, 70)),
    Category(1231, "Dresses", "Women › Clothing › Dresses", LETTER_SIZES,
             (12, 88, 73, 162, 4838, 365, 4783, 1329, 1456, 255), (12, 45)),
    Category(4881, "Games", "Kids › Toys & games › Games", NO_SIZES,
             (89162, 5827, 3916, 9813, 8131, 67503, 1287, 4327, 22771, 4063), (10, 30)),
    Category(1812, "Bags", "Women › Bags", NO_SIZES,
             (6289, 1209, 12, 73, 10213, 15347, 1113, 2341, 35631, 7029), (20, 70)),
)  # fmt: skip
CATEGORIES: tuple[tuple[int, str], ...] = tuple((c.id, c.name) for c in CATALOGUE)
CATEGORY_PATHS: dict[int, str] = {c.id: c.path for c in CATALOGUE}
# Every (category, brand) niche the market has: 60 (benchmarks spread monitors over them).
NICHE_PAIRS: tuple[tuple[int, int], ...] = tuple((c.id, b) for c in CATALOGUE for b in c.brands)
