"""Answers that cannot be believed: a block that looks like success (MARKETPLACE.md).

The marketplace may answer a block with a page that ignores its filters. These checks refuse
such pages as data (`SuspiciousAnswer("filters_ignored")`) from what the items themselves show.
"""

from __future__ import annotations

from ._conditions import conditions_of_status_ids
from ._query import CatalogueQuery
from .errors import SuspiciousAnswer
from .models import CataloguePage

# Filters are judged on pages of at least this many organic listings.
_FILTER_SAMPLE = 10
# Two one-category feeds sharing this share of their listings are one unfiltered feed.
_SAME_FEED = 0.8


def check_filters(query: CatalogueQuery, page: CataloguePage) -> None:
    """`SuspiciousAnswer("filters_ignored")` for a page that visibly ignores its filters:
    N brands asked and far more distinct brands answered, or conditions outside the asked ones,
    judged on at least `_FILTER_SAMPLE` organic listings (promoted ones follow no filter)."""
    organic = [listing for listing in page.listings if not listing.promoted]
    if len(organic) < _FILTER_SAMPLE:
        return
    if query.brand_ids:
        brands = {listing.brand.casefold() for listing in organic if listing.brand}
        allowed = 2 * len(query.brand_ids) + 2  # sub-brands ("Nike Air") ride along
        if len(brands) > allowed:
            raise SuspiciousAnswer(
                "filters_ignored",
                f"{len(query.brand_ids)} brand(s) asked, {len(brands)} answered",
            )
    asked = conditions_of_status_ids(query.status_ids)
    if asked:
        known = [listing.condition for listing in organic if listing.condition]
        outside = sum(1 for condition in known if condition not in asked)
        if len(known) >= _FILTER_SAMPLE and outside > len(known) // 5:
            raise SuspiciousAnswer(
                "filters_ignored", f"{outside} of {len(known)} listings in other conditions"
            )


def check_categories_apart(feeds: list[CataloguePage]) -> None:
    """`SuspiciousAnswer("filters_ignored")` when two one-category feeds are mostly the same
    listings: the category filter was dropped and both got the unfiltered feed. (A feed's
    category cannot be checked from its items, which do not carry it. A parent category and
    its child share listings legitimately, but the child is a small part of the parent's
    window, so only near-identical feeds count.)"""
    windows = [{x.id for x in feed.listings if not x.promoted} for feed in feeds]
    for index, first in enumerate(windows):
        for second in windows[index + 1 :]:
            shared = len(first & second)
            if shared >= _FILTER_SAMPLE and shared >= _SAME_FEED * max(len(first), len(second)):
                raise SuspiciousAnswer(
                    "filters_ignored", f"two categories answered the same {shared} listings"
                )
