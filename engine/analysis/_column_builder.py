"""`ColumnBuilder`: rows in, `ListingColumns`/`EventColumns` out, in flat memory.

Rows are appended into typed arrays (8 bytes a number, 1 byte a state or kind, a 4-byte code
per string, each distinct string kept once) rather than lists of Python objects, which cost
ten times more: a 59 MiB export of 700,000 events held about 160 MB of lists before the
analysis began. The columns come out exactly as before: vocabularies sorted, codes re-mapped.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from decimal import Decimal
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import numpy.typing as npt

from ._columns import EVENT_KINDS, NONE_CODE, STATES, EventColumns, ListingColumns, epoch

if TYPE_CHECKING:
    from store import ListingEventRecord, ListingRecord

    from .export_format import ExportEventV1, ExportListingV1

# The rows the columns are built from: the store's records (`from_records`) and an export's
# (`from_export`). Their fields share names and meanings; prices are Decimal in the one,
# float in the other, and both read the same as a float.
ListingRow: TypeAlias = "ListingRecord | ExportListingV1"
EventRow: TypeAlias = "ListingEventRecord | ExportEventV1"

_STATE_CODES = {s: i for i, s in enumerate(STATES)}
_KIND_CODES = {k: i for i, k in enumerate(EVENT_KINDS)}
_NAN = math.nan


class _Vocabulary:
    """Strings as codes in order of first appearance; sorted (and re-coded) at the end."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}
        self.column = array("i")

    def add(self, value: str | None) -> None:
        if value is None:
            self.column.append(NONE_CODE)
        else:
            self.column.append(self._codes.setdefault(value, len(self._codes)))

    def sorted(self) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
        vocabulary = tuple(sorted(self._codes))
        codes = np.frombuffer(self.column, np.int32) if self.column else np.empty(0, np.int32)
        if not vocabulary:
            return vocabulary, codes.copy()
        new_code = np.empty(len(vocabulary) + 1, np.int32)  # the last slot maps NONE_CODE
        new_code[-1] = NONE_CODE
        for new, value in enumerate(vocabulary):
            new_code[self._codes[value]] = new
        return vocabulary, new_code[codes]


def _f64(values: array[float]) -> npt.NDArray[np.float64]:
    return np.frombuffer(values, np.float64).copy() if values else np.empty(0, np.float64)


def _number(value: Decimal | float | None) -> float:
    return _NAN if value is None else float(value)


class ColumnBuilder:
    """Accumulates listing and event rows and turns them into columns once."""

    def __init__(self) -> None:
        self._item_id = array("q")
        self._category_id = array("q")
        self._brand, self._size, self._condition = _Vocabulary(), _Vocabulary(), _Vocabulary()
        self._price, self._favourites, self._listed_at = array("d"), array("d"), array("d")
        self._first_seen_at, self._last_seen_at = array("d"), array("d")
        self._state, self._state_changed_at = array("b"), array("d")
        self._likely = array("b")
        self._titles: list[str | None] = []
        self._currencies: set[str] = set()
        self._names: dict[int, Counter[str]] = {}
        self._e_item_id, self._e_kind = array("q"), array("b")
        self._e_from, self._e_to = array("b"), array("b")
        self._e_price, self._e_at, self._e_likely = array("d"), array("d"), array("b")

    def add_listing(
        self, r: ListingRow, *, likely: bool = False, category_name: str | None = None
    ) -> None:
        """One listing: a store record and an export's listing name their fields alike (the
        export is the records written out), so both come in through here."""
        category_id = r.category_id
        self._item_id.append(r.item_id)
        self._category_id.append(NONE_CODE if category_id is None else category_id)
        self._brand.add(r.brand)
        self._size.add(r.size)
        self._condition.add(r.condition)
        self._price.append(_number(r.price))
        self._favourites.append(_number(r.favourites))
        self._listed_at.append(_NAN if r.listed_at is None else epoch(r.listed_at))
        self._first_seen_at.append(epoch(r.first_seen_at))
        self._last_seen_at.append(epoch(r.last_seen_at))
        self._state.append(_STATE_CODES[r.state])
        self._state_changed_at.append(epoch(r.state_changed_at))
        self._likely.append(likely)
        self._titles.append(r.title)
        if r.currency is not None:
            self._currencies.add(r.currency)
        if category_name and category_id is not None:
            self._names.setdefault(category_id, Counter())[category_name] += 1

    def drop_evidence(self) -> None:
        """Forget what only version 2 evidence says (likely sales, category names): for a
        version 1 export whose version was learnt after its listings were read."""
        self._likely = array("b", bytes(len(self._likely)))
        self._e_likely = array("b", bytes(len(self._e_likely)))
        self._names.clear()

    def category_names(self) -> dict[int, str]:
        """Per category id, the name its listings' sources gave most often."""
        return {cid: names.most_common(1)[0][0] for cid, names in self._names.items()}

    def add_event(self, e: EventRow, *, likely: bool = False) -> None:
        """One listing event, a store record or an export's (named alike, as listings are)."""
        self._e_item_id.append(e.item_id)
        self._e_kind.append(_KIND_CODES[e.kind])
        self._e_from.append(NONE_CODE if e.from_state is None else _STATE_CODES[e.from_state])
        self._e_to.append(NONE_CODE if e.to_state is None else _STATE_CODES[e.to_state])
        self._e_price.append(_number(e.price))
        self._e_at.append(epoch(e.at))
        self._e_likely.append(likely)

    def listing_columns(self) -> ListingColumns:
        brands, brand_codes = self._brand.sorted()
        sizes, size_codes = self._size.sorted()
        conditions, condition_codes = self._condition.sorted()
        return ListingColumns(
            item_id=np.array(self._item_id, np.int64),
            category_id=np.array(self._category_id, np.int64),
            brand=brand_codes,
            size=size_codes,
            condition=condition_codes,
            price=_f64(self._price),
            favourites=_f64(self._favourites),
            listed_at=_f64(self._listed_at),
            first_seen_at=_f64(self._first_seen_at),
            last_seen_at=_f64(self._last_seen_at),
            state=np.array(self._state, np.int8),
            state_changed_at=_f64(self._state_changed_at),
            brands=brands,
            sizes=sizes,
            conditions=conditions,
            titles=tuple(self._titles),
            currencies=tuple(sorted(self._currencies)),
            likely=np.array(self._likely, np.bool_),
        )

    def event_columns(self) -> EventColumns:
        return EventColumns(
            item_id=np.array(self._e_item_id, np.int64),
            kind=np.array(self._e_kind, np.int8),
            from_state=np.array(self._e_from, np.int8),
            to_state=np.array(self._e_to, np.int8),
            price=_f64(self._e_price),
            at=_f64(self._e_at),
            likely=np.array(self._e_likely, np.bool_),
        )
