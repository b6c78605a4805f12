"""What a result says about itself: counts of what went in and came out (`counts`), and the
notes a reader sees beside the ranking (`notes`): how the evidence was read, what it lacks or
mixes, how thin niches pool, and how well the polls covered the window. Apart from the
statistics (`_measure`) because these are totals and sentences over what the frame and the
coverage already hold: read by people, never ranked on.
"""

from __future__ import annotations

import numpy as np

from ._basis import WITHDRAWAL, SalesBasisChoice
from ._columns import DELETED, NONE_CODE, RESERVED
from ._frame import Frame
from ._input import AnalysisInput
from ._result import Alert, Coverage


def counts(data: AnalysisInput, f: Frame, alerts: list[Alert]) -> dict[str, int]:
    """Totals: the input, the window by state, the niches by level, the alerts by kind and
    the sales by evidence (confirmed, likely)."""
    out = {
        "listings": len(data.listings),
        "events": len(data.events),
        "listings_in_window": len(f.rows),
        "open": int(f.open_now.sum()),
        "reserved": int((f.state == RESERVED).sum()),
        "sold": int(f.sold.sum()),
        "deleted": int((f.state == DELETED).sum()),
        "niches": f.n_niches,
    }
    for number, level in enumerate(("exact", "brand", "category")):
        out[f"niches_{level}"] = int(np.count_nonzero(f.codes.level == number))
    for kind in ("deal", "sell_through_jump", "new_hot_niche"):
        out[f"alerts_{kind}"] = sum(1 for a in alerts if a.kind == kind)
    likely = int(np.count_nonzero(f.likely))
    out["sold_confirmed"] = out["sold"] - (likely if f.include_likely else 0)
    out["sold_likely"] = likely
    return out


def notes(
    data: AnalysisInput,
    f: Frame,
    min_support: int,
    covered: Coverage | None,
    sales: SalesBasisChoice,
) -> tuple[str, ...]:
    """The notes, in reading order: the evidence, the data, the pooling, the coverage."""
    pooling = (
        f"Niches with fewer than {min_support} listings pool into (category, brand), then category."
    )
    return tuple(
        _evidence_notes(data, f, min_support)
        + _data_notes(data, f, sales)
        + [pooling]
        + _coverage_notes(covered)
    )


def _coverage_notes(covered: Coverage | None) -> list[str]:
    """How well the polls covered the window (`coverage`): clock, gaps, failed polls."""
    if covered is None:
        return []
    notes = []
    if covered.clock != "market":
        notes.append(
            "Some observations are stamped on the service's clock, not the marketplace's: "
            "the marketplace's stated time was missing or not believable there."
            if covered.clock == "mixed"
            else "Observations are stamped on the service's clock (the marketplace stated no "
            "believable time of its own)."
        )
    if covered.gaps:
        hours = sum((g.end - g.start).total_seconds() for g in covered.gaps) / 3600
        notes.append(
            f"The polls missed {len(covered.gaps)} "
            f"stretch{'es' if len(covered.gaps) != 1 else ''} of the window "
            f"({hours:.1f} hours in all: {covered.gaps[0].why}"
            + (", and more" if len(covered.gaps) > 1 else "")
            + "). What changed in them was seen late, and listings that appeared and went "
            "within them were not seen at all."
        )
    if covered.polls_failed:
        notes.append(
            f"{_plural(covered.polls_failed, 'poll')} of {covered.polls_ok + covered.polls_failed} "
            f"failed ({covered.suspected_blocks} suspected "
            f"block{'s' if covered.suspected_blocks != 1 else ''})."
        )
    return notes


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _evidence_notes(data: AnalysisInput, f: Frame, min_support: int) -> list[str]:
    """How the evidence was read: snapshot or history, over what window, and which listings
    the days to sell leave out."""
    notes: list[str] = []
    if not f.history:
        notes.append(
            "Snapshot evidence (one scrape, no state history): no sell-through, sold prices, "
            "time to sell, trend or alerts; niches are ranked by the demand proxy "
            "favourites per listing-day x median ask x support/(support+min_support)."
        )
    else:
        notes.append(
            f"History evidence over {f.window_days:.1f} days; score = Wilson lower bound of "
            "sell-through x median sold price / max(1, Kaplan-Meier median days to sell, or "
            "the window length when the median is not reached), each of the three first "
            "shrunk towards the niche's parent ((category, brand), or the category for the "
            f"category-level niches) as if the parent's figure were worth {min_support} more "
            "listings (sales, for price and days)."
        )
        if f.window_days < 2:
            notes.append("The history is shorter than two days: rates are very uncertain.")
    requested = data.window_days
    if requested is not None and f.window_days + 1e-6 < requested:
        notes.append(
            f"Requested a {requested:g}-day window but the evidence only covers "
            f"{f.window_days:.1f} days; the window was shortened to what was observed."
        )
    unknown_age = int(np.count_nonzero(~f.age_known))
    if f.history and unknown_age:
        notes.append(
            f"{_plural(unknown_age, 'listing')} were already on sale when first seen, with no "
            "listing date the marketplace still gives: they count in supply, sales and "
            "sell-through, but not in days to sell (their age is unknown). Days to sell come "
            "from listings that appeared while watched."
        )
    if not f.state_events and f.history:
        notes.append("No state events: states at the window midpoint are inferred from listings.")
    return notes


def _ranked_on(sales: SalesBasisChoice) -> str:
    """Which sales the niches are ranked on, and why (the sales basis, `_basis`)."""
    unsold = "a likely sale counts as a listing still unsold when the feed last showed it."
    if sales.basis == "confirmed_and_likely":
        return "Niches are ranked on both, as asked."
    if sales.basis == "likely":
        return (
            "Niches are ranked on likely sales: no source confirmed a sale in this window (the "
            "marketplace refused item pages). Ask for confirmed sales only "
            "(include_likely_sales=false) to leave them out."
        )
    if sales.reason == "requested":
        return f"Niches are ranked on confirmed sales only, as asked: {unsold}"
    return (
        f"Niches are ranked on confirmed sales only (a source confirmed sales in this window): "
        f"{unsold} Include likely sales (include_likely_sales) to rank on both."
    )


def _data_notes(data: AnalysisInput, f: Frame, sales: SalesBasisChoice) -> list[str]:
    """What the data mixes or lacks: currencies, confirmed and likely sales, listings in the
    window, category ids."""
    notes: list[str] = []
    if len(data.listings.currencies) > 1:
        notes.append(
            "Prices mix currencies (" + ", ".join(data.listings.currencies) + "); they are "
            "compared as plain numbers."
        )
    likely = int(np.count_nonzero(f.likely))
    if likely:
        confirmed = int(np.count_nonzero(f.sold)) - (likely if f.include_likely else 0)
        seen = (
            f"{_plural(confirmed, 'confirmed sale')} (the item page or the detail API saw them "
            "sold)"
            if confirmed
            else "No confirmed sale (no item page or detail API saw one sold)"
        )
        notes.append(
            f"{seen} and {_plural(likely, 'likely sale')} (gone from the feed for several checks "
            f"in a row, with no source able to confirm them; {WITHDRAWAL.lower()}, so some may "
            "have been hidden or deleted rather than sold). " + _ranked_on(sales)
        )
    if len(f.rows) == 0:
        notes.append("No listings in the window: nothing to rank.")
    elif bool(np.all(data.listings.category_id[f.rows] == NONE_CODE)):
        notes.append(
            "Categories are unknown: today's marketplace does not say a listing's category, so "
            "niches are ranked by brand, size and condition. Name the categories in the "
            "catalogue URL (catalog[]=...) to have them: each is then read as a feed of its own."
        )
    return notes
