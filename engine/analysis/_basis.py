"""Which sales an analysis counts (`SalesBasisChoice`), decided from the evidence first.

A sale is *confirmed* when a source (the item page, the detail API) saw the listing sold, and
*likely* when the listing left the feed for several checks in a row with no source able to
say (evidence `absence`). Absence cannot tell a sale from a withdrawal, so confirmed sales are
the default basis. But when the marketplace refuses every confirming source for good, every
sale a monitor records is a likely one, and a confirmed-only analysis would show a market
where nothing sells. So the caller's `include_likely_sales` is a choice with an automatic
default:

- True: confirmed and likely sales (`confirmed_and_likely`, reason `requested`);
- False: confirmed sales only, even when that leaves none (`confirmed`, reason `requested`);
- None (automatic): likely sales when the window holds likely sales and not one confirmed
  sale, i.e. no confirming source answered in it (`likely`, reason `no_confirmed_sales`);
  otherwise confirmed only (reason `confirmed_sales_seen`, or `no_likely_sales` when there
  is nothing to infer).

The choice is a pure function of the input's sales in the window (`sales_evidence`): the
same evidence always gives the same basis, so a replay of a run or a second import of the
same export decides the same. Every choice carries a sentence for people (`note`), and every
sentence that counts likely sales says that absence cannot tell a sale from a withdrawal.

Stored results older than the choice carry only `include_likely_sales` (then the whole
choice, confirmed only by default): `with_sales_basis` fills in what they lack when read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ._columns import SOLD
from ._frame import window_start
from ._input import AnalysisInput

SalesBasis = Literal["confirmed", "likely", "confirmed_and_likely"]
BasisReason = Literal[
    "requested",  # the caller said include_likely_sales true or false
    "confirmed_sales_seen",  # automatic: a source confirmed at least one sale in the window
    "no_likely_sales",  # automatic: no likely sale in the window, nothing to infer
    "no_confirmed_sales",  # automatic: likely sales and no confirmed one: likely sales used
    "stored_before_auto",  # read back from an analysis made when confirmed-only was the default
]

WITHDRAWAL = "Absence cannot tell a sale from a withdrawal"
REFUSED = "Sales inferred from absence: the marketplace refused item pages"


@dataclass(frozen=True, slots=True)
class SalesEvidence:
    """The window's sales by evidence: confirmed by a source, or likely (by absence)."""

    confirmed: int
    likely: int


@dataclass(frozen=True, slots=True)
class SalesBasisChoice:
    """Which sales an analysis counts, why, what the caller asked and a sentence saying so."""

    basis: SalesBasis
    reason: BasisReason
    requested: bool | None  # the caller's include_likely_sales; None: the automatic choice
    note: str

    @property
    def include_likely(self) -> bool:
        return self.basis != "confirmed"

    def to_json(self) -> dict[str, Any]:
        return {
            "sales_basis": self.basis,
            "sales_basis_reason": self.reason,
            "sales_basis_note": self.note,
            "include_likely_sales_requested": self.requested,
        }


def sales_evidence(data: AnalysisInput) -> SalesEvidence:
    """The sales in `data`'s window (those `build_frame` counts when likely sales are in):
    sold listings first seen by now whose sale falls at or after the window's start."""
    lst = data.listings
    if len(lst) == 0:
        return SalesEvidence(0, 0)
    assert lst.likely is not None  # filled in by the columns
    with np.errstate(invalid="ignore"):  # NaN sale times are outside every window
        sold = (
            (lst.state == SOLD)
            & (lst.first_seen_at <= data.now_epoch)
            & (lst.state_changed_at >= window_start(data))
        )
    likely = int(np.count_nonzero(sold & lst.likely))
    return SalesEvidence(confirmed=int(np.count_nonzero(sold)) - likely, likely=likely)


def choose_sales_basis(requested: bool | None, evidence: SalesEvidence) -> SalesBasisChoice:
    """The basis for `requested` (the caller's include_likely_sales) over `evidence` (the
    module doc has the rule)."""
    basis: SalesBasis
    reason: BasisReason
    if requested is not None:
        basis, reason = ("confirmed_and_likely" if requested else "confirmed"), "requested"
    elif evidence.likely == 0:
        basis, reason = "confirmed", "no_likely_sales"
    elif evidence.confirmed > 0:
        basis, reason = "confirmed", "confirmed_sales_seen"
    else:
        basis, reason = "likely", "no_confirmed_sales"
    return SalesBasisChoice(basis, reason, requested, basis_note(basis, reason, evidence.likely))


def basis_note(basis: SalesBasis, reason: BasisReason, likely: int) -> str:
    """The basis in a sentence for people (the analysis page, the dashboard, the API)."""
    if basis == "likely":
        return (
            f"{REFUSED} and no source confirmed a sale in this window, so a listing that "
            f"left the feed for several checks counts as a likely sale. {WITHDRAWAL}: some "
            "of these listings may have been withdrawn or hidden, not sold. Ask for "
            "confirmed sales only (include_likely_sales=false) to leave them out."
        )
    if basis == "confirmed_and_likely":
        return (
            "Sales include likely ones, as asked: a listing that left the feed for several "
            f"checks with no source to confirm it counts as a sale. {WITHDRAWAL}: some likely "
            "sales may have been withdrawn or hidden, not sold."
        )
    if likely == 0:
        return "Sales are confirmed sales: the item page or the detail API saw each one sold."
    why = {
        "requested": ", as asked",
        "confirmed_sales_seen": ": a source confirmed sales in this window",
        "stored_before_auto": ", the default when this analysis was made",
    }.get(reason, "")
    return (
        f"Confirmed sales only{why}. {_plural(likely, 'likely sale')} (gone from the feed, "
        f"unconfirmed; {WITHDRAWAL[0].lower()}{WITHDRAWAL[1:]}) count as listings still "
        "unsold when the feed last showed them."
    )


def with_sales_basis(document: Mapping[str, Any]) -> dict[str, Any]:
    """A stored result document with its sales basis fields (`SalesBasisChoice.to_json`).

    Documents stored before the automatic choice lack them: their `include_likely_sales` was
    the whole choice (confirmed only unless asked), so the basis is derived from it. A
    document that has them is returned as it is (copied).
    """
    out = dict(document)
    if isinstance(out.get("sales_basis"), str):
        return out
    include = out.get("include_likely_sales") is True
    counts = out.get("counts")
    likely = counts.get("sold_likely") if isinstance(counts, Mapping) else None
    basis: SalesBasis = "confirmed_and_likely" if include else "confirmed"
    reason: BasisReason = "requested" if include else "stored_before_auto"
    note = basis_note(basis, reason, likely if isinstance(likely, int) else 0)
    return out | SalesBasisChoice(basis, reason, include, note).to_json()


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
