"""The columns an analysis runs on, and the polls that say when they were observed.

Listings and their state events become numpy columns once, so the analysis itself never walks
Python objects. Strings (brand, size, condition) are dictionary-encoded against sorted
vocabularies; timestamps are UTC epoch seconds (float64, NaN when unknown); prices are float64
(NaN when unknown). `likely` marks what absence from the feed established (a listing sold by
absence, a state event with evidence `absence`): likely sales, which an analysis ranks on
only when asked to.

A monitor's evidence also carries its polls (`PollMark`: when each poll looked, on the
market's clock, and whether it could read the feed): the polls say when a listing first seen
mid-way was listed (between the poll before and the one that saw it) and where the evidence has
gaps.

Types only: they are filled by `ColumnBuilder` (`_column_builder.py`) and gathered into an
`AnalysisInput` (`_input.py`), which imports this module and never the other way round.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from store import PollRecord

F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
I8 = npt.NDArray[np.int8]

STATES: tuple[str, ...] = ("open", "reserved", "sold", "deleted")
OPEN, RESERVED, SOLD, DELETED = 0, 1, 2, 3
EVENT_KINDS: tuple[str, ...] = ("new", "state", "price", "counts")
KIND_NEW, KIND_STATE, KIND_PRICE, KIND_COUNTS = 0, 1, 2, 3
NONE_CODE = -1


def epoch(value: datetime) -> float:
    """UTC epoch seconds; a naive datetime is taken as UTC (the store only writes UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def _frozen(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    array = np.ascontiguousarray(array)
    array.setflags(write=False)
    return array


def _columns_equal(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    for f in dataclasses.fields(a):  # type: ignore[arg-type]
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            if not isinstance(y, np.ndarray) or x.dtype != y.dtype or x.shape != y.shape:
                return False
            if not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
                return False
        elif x != y:
            return False
    return True


# The dtype of each array a column class declares, by its annotation (`from __future__
# import annotations` keeps them as written), so a column's dtype is declared once.
_DTYPE_OF: dict[str, type] = {
    "I64": np.int64,
    "I32": np.int32,
    "I8": np.int8,
    "F64": np.float64,
    "B | None": np.bool_,  # `likely`, all False when None
}


_COLUMN_DTYPES: dict[type, dict[str, type]] = {}


def _column_dtypes(columns: type) -> dict[str, type]:
    """The array fields of dataclass `columns` and their dtypes (worked out once a class)."""
    dtypes = _COLUMN_DTYPES.get(columns)
    if dtypes is None:
        dtypes = {}
        for f in dataclasses.fields(columns):
            annotation = str(f.type)
            if annotation in _DTYPE_OF:
                dtypes[f.name] = _DTYPE_OF[annotation]
            elif not annotation.startswith("tuple["):
                # Refused, not skipped: a column the checks passed over would go unfrozen
                # and unchecked in shape.
                raise TypeError(
                    f"{columns.__name__}.{f.name}: declare a column as one of "
                    f"{', '.join(_DTYPE_OF)} or a tuple, not {annotation}"
                )
        _COLUMN_DTYPES[columns] = dtypes
    return dtypes


class _Columns:
    """What listing and event columns share: one row per entry, each array field frozen in
    its annotation's dtype (`_DTYPE_OF`), `likely` optional, compared by value."""

    WHAT: ClassVar[str]  # "listing" or "event", for the shape error
    item_id: I64
    likely: B | None

    def __post_init__(self) -> None:
        n = len(self.item_id)
        if self.likely is None:
            object.__setattr__(self, "likely", np.zeros(n, np.bool_))
        for name, dtype in _column_dtypes(type(self)).items():
            array: npt.NDArray[Any] = np.asarray(getattr(self, name), dtype=dtype)
            if array.shape != (n,):
                raise ValueError(f"{self.WHAT} column {name} has shape {array.shape}, want ({n},)")
            object.__setattr__(self, name, _frozen(array))

    def __len__(self) -> int:
        return len(self.item_id)

    def __eq__(self, other: object) -> bool:
        return _columns_equal(self, other)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class ListingColumns(_Columns):
    """One row per listing. Codes index the vocabularies; `NONE_CODE` (-1) means unknown."""

    WHAT: ClassVar[str] = "listing"

    item_id: I64
    category_id: I64  # NONE_CODE when unknown
    brand: I32
    size: I32
    condition: I32
    price: F64
    favourites: F64
    listed_at: F64
    first_seen_at: F64
    last_seen_at: F64
    state: I8  # index into STATES
    state_changed_at: F64
    brands: tuple[str, ...] = ()
    sizes: tuple[str, ...] = ()
    conditions: tuple[str, ...] = ()
    titles: tuple[str | None, ...] | None = None
    currencies: tuple[str, ...] = ()
    likely: B | None = None  # sold by absence (a likely sale); None: no listing is

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.titles is not None and len(self.titles) != len(self):
            raise ValueError("titles must have one entry per listing")


@dataclass(frozen=True, eq=False)
class EventColumns(_Columns):
    """One row per listing event (any kind); `from_state`/`to_state` index STATES or -1."""

    WHAT: ClassVar[str] = "event"

    item_id: I64
    kind: I8
    from_state: I8
    to_state: I8
    price: F64
    at: F64
    likely: B | None = None  # established by absence from the feed; None: no event is

    @classmethod
    def empty(cls) -> EventColumns:
        return cls(
            item_id=np.zeros(0, np.int64),
            kind=np.zeros(0, np.int8),
            from_state=np.zeros(0, np.int8),
            to_state=np.zeros(0, np.int8),
            price=np.zeros(0, np.float64),
            at=np.zeros(0, np.float64),
        )


@dataclass(frozen=True, slots=True)
class PollMark:
    """One poll of a monitor: when it looked (epoch seconds, the market's clock when the poll
    could read it, `clock` says which), whether it read the feed, and why not."""

    at: float
    ok: bool
    why: str | None = None  # a failed poll: "blocked", "timed out", "error"
    clock: str | None = None  # "market" or "service"; None: not recorded (older monitors)


@dataclass(frozen=True, slots=True)
class PollRow:
    """A poll as stored or exported: its service-clock start, its market-clock stamp."""

    started_at: datetime
    market_at: datetime | None
    error: str | None
    clock: str | None

    @classmethod
    def of(cls, poll: PollRecord) -> PollRow:
        return cls(poll.started_at, poll.market_at, poll.error, poll.clock)


def poll_marks(rows: Iterable[PollRow]) -> tuple[PollMark, ...]:
    """The polls on the clock their observations were stamped with.

    A successful poll on the market's clock says when it looked (`market_at`). A failed poll
    read no clock, so its start is carried onto the market's clock between its neighbours
    (linear in the service's time; at the ends, the nearest offset): a gap in the evidence
    must sit where the listings' stamps put it, whatever the market's rate.
    """
    rows = sorted(rows, key=lambda r: r.started_at)
    known = [(epoch(r.started_at), epoch(r.market_at)) for r in rows if r.market_at is not None]
    service = np.array([k[0] for k in known], np.float64)
    market = np.array([k[1] for k in known], np.float64)
    marks = []
    for row in rows:
        started = epoch(row.started_at)
        if row.market_at is not None:
            at = epoch(row.market_at)
        elif len(known) == 0:
            at = started
        elif started <= service[0]:
            at = market[0] - (service[0] - started)
        elif started >= service[-1]:
            at = market[-1] + (started - service[-1])
        else:
            at = float(np.interp(started, service, market))
        marks.append(
            PollMark(
                at=at,
                ok=row.error is None,
                why=None if row.error is None else failure_kind(row.error),
                clock=row.clock if row.clock in ("market", "service") else None,
            )
        )
    return tuple(marks)


def failure_kind(error: str | None) -> str:
    """A failed poll's error text in one word for the evidence's gaps."""
    text = (error or "").lower()
    if "suspectedblock" in text or "block" in text or "429" in text or "403" in text:
        return "blocked"
    if "timed out" in text or "timeout" in text:
        return "timed out"
    return "error"


def last_observation(listings: ListingColumns, polls: Iterable[PollMark]) -> datetime | None:
    """When the evidence last looked at the market, on the clock that stamped it: unsold
    listings are censored there (not at the moment of the analysis, which may be on another
    clock, or long after the monitor stopped). None without any observation."""
    seen = [float(listings.last_seen_at.max())] if len(listings) else []
    observed = [p.at for p in polls if p.ok] + seen
    return datetime.fromtimestamp(max(observed), UTC) if observed else None
