"""A niche's favourites stay an int64 whatever counts an import states.

An export may hold any 64-bit favourites count; a niche's sum of them (or one count near 2**63,
which is 2**63 as a float) does not fit an int64, and the cast used to answer garbage with a
RuntimeWarning. It is cut to the int64 range instead.
"""

from __future__ import annotations

import warnings

import numpy as np

from engine.analysis import AnalysisInput, analyse

from .factory import NOW, History, export_document

INT64_MAX = 2**63 - 1
LARGEST_FLOAT_BELOW_2_63 = int(np.nextafter(2.0**63, 0.0))


def _favourites_of_the_niche(counts: list[int]) -> int:
    h = History()
    for count in counts:
        h.listing(brand="Nike", favourites=count, listed_days_ago=5, seen_days_ago=0)
    data = AnalysisInput.from_export(export_document(h))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the old cast's "invalid value encountered in cast"
        result = analyse(data, generated_at=NOW)
        [niche] = result.niches  # few listings: one niche (its category) holds them all
        return niche.favourites


def test_a_count_at_the_int64_limit_is_capped_not_garbage() -> None:
    assert _favourites_of_the_niche([INT64_MAX]) == LARGEST_FLOAT_BELOW_2_63


def test_a_sum_past_the_int64_limit_is_capped_not_garbage() -> None:
    assert _favourites_of_the_niche([INT64_MAX, INT64_MAX, 5]) == LARGEST_FLOAT_BELOW_2_63


def test_a_sum_below_the_int64_limit_is_capped_not_garbage() -> None:
    assert _favourites_of_the_niche([-INT64_MAX, -INT64_MAX]) == -(2**63)


def test_ordinary_counts_are_summed_exactly() -> None:
    assert _favourites_of_the_niche([3, 4, 10]) == 17
