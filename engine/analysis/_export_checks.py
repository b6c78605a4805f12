"""The checks of a monitor export's parts (format `nichescope.monitor-export`, version 1 or 2).

The format, its versions and the types of its parts are `export_format`'s; here each part is
validated with its type (a listing, event or poll at a time: `_export_stream.py`, the only
importer, hands them over as it reads them) and put into the analysis' columns. The first
problem raises `InvalidExport` naming where it is (``listings[12].first_seen_at``) and what was
expected.

Version 2 says how each state was established; a sale by absence is a likely sale. Version 1
has no evidence: its sales are taken as confirmed (before version 2 every state came from the
item detail API).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from functools import cache
from types import NoneType, UnionType
from typing import (
    Annotated,
    Any,
    Generic,
    Literal,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from pydantic import BaseModel, TypeAdapter, ValidationError

from ._column_builder import ColumnBuilder
from ._columns import PollRow
from ._errors import InvalidExport, quote
from .export_format import (
    Counts,
    Expect,
    ExportEvent,
    ExportEventV1,
    ExportFormat,
    ExportListing,
    ExportListingV1,
    ExportMonitor,
    ExportPoll,
    ReadableVersion,
    Refused,
    Timestamp,
)

T = TypeVar("T")


def _is_model(type_: Any) -> bool:
    return isinstance(type_, type) and issubclass(type_, BaseModel)


class Part(Generic[T]):
    """A part of the export, validated by its model or type (`export_format`'s); a refusal
    is the `InvalidExport` of its first problem."""

    __slots__ = ("_type", "_validate")

    def __init__(self, type_: Any) -> None:
        self._type = type_
        self._validate: Callable[[object], T] = (
            type_.model_validate if _is_model(type_) else TypeAdapter(type_).validate_python
        )

    def __call__(self, value: object, where: str) -> T:
        try:
            return self._validate(value)
        except ValidationError as err:
            raise refusal(self._type, err.errors(include_url=False)[0], where) from err


_FORMAT: Part[str] = Part(ExportFormat)
_VERSION: Part[int] = Part(ReadableVersion)
EXPORTED_AT: Part[datetime] = Part(Timestamp)
_COUNTS: Part[dict[str, int]] = Part(Counts)
_MONITOR: Part[ExportMonitor] = Part(ExportMonitor)
_LISTING: Part[ExportListing] = Part(ExportListing)
_LISTING_V1: Part[ExportListingV1] = Part(ExportListingV1)
_EVENT: Part[ExportEvent] = Part(ExportEvent)
_EVENT_V1: Part[ExportEventV1] = Part(ExportEventV1)
_POLL: Part[ExportPoll] = Part(ExportPoll)


def check_header(header: Mapping[str, Any]) -> int:
    """The export's version (`InvalidExport` if the format or version is not one we read)."""
    _FORMAT(header.get("format"), "format")
    return _VERSION(header.get("version"), "version")


def check_counts(counts: object) -> None:
    try:
        _COUNTS(counts, "counts")
    except InvalidExport:
        raise InvalidExport("counts", "expected an object of integers") from None


def check_monitor(monitor: object) -> dict[str, Any]:
    """The monitor object, checked; the fields an analysis keeps of it (those it holds)."""
    _MONITOR(monitor, "monitor")
    assert isinstance(monitor, Mapping)
    return {k: v for k, v in monitor.items() if k in ("id", "label", "url")}


def add_listing_row(builder: ColumnBuilder, row: object, i: int, *, version: int) -> None:
    where = f"listings[{i}]"
    if version >= 2:
        r = _LISTING(row, where)
        likely = r.state_evidence == "absence" and r.state == "sold"
        builder.add_listing(r, likely=likely, category_name=r.category_name)
    else:
        builder.add_listing(_LISTING_V1(row, where))


def add_event_row(builder: ColumnBuilder, row: object, i: int, *, version: int) -> None:
    where = f"events[{i}]"
    if version >= 2:
        e = _EVENT(row, where)
        builder.add_event(e, likely=e.evidence == "absence")
    else:
        builder.add_event(_EVENT_V1(row, where))


def poll_row(row: object, i: int) -> PollRow:
    """A poll, checked against the export's type (the analysis uses only its times, error
    and clock; an import that accepted any shape there would accept what no export held)."""
    p = _POLL(row, f"polls[{i}]")
    return PollRow(started_at=p.started_at, market_at=p.market_at, error=p.error, clock=p.clock)


# A refusal in words -------------------------------------------------------------------------


def refusal(type_: Any, error: Mapping[str, Any], where: str) -> InvalidExport:
    """The `InvalidExport` of pydantic's `error` for a value of `type_` at `where`: "missing",
    a `Refused`'s own words, or "expected <what the type takes>, got <the value, quoted>"."""
    loc = error["loc"]
    value = error.get("input")
    if loc:
        where += "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    if error["type"] == "missing":
        return InvalidExport(where, "missing")
    if isinstance(cause := error.get("ctx", {}).get("error"), Refused):
        return InvalidExport(where, str(cause))
    hint = _field_types(type_).get(loc[0], type_) if loc and _is_model(type_) else type_
    if _is_model(hint):
        return InvalidExport(where, f"expected an object, got {type(value).__name__}")
    want, nullable = _expectation(hint)
    got = quote(value)  # bounded: the value may be megabytes long, or nested deep
    return InvalidExport(where, f"expected {want}{' or null' if nullable else ''}, got {got}")


@cache
def _field_types(model: type[BaseModel]) -> dict[str, Any]:
    return get_type_hints(model, include_extras=True)


def _expectation(hint: Any) -> tuple[str, bool]:
    """What `hint` takes, in words; whether it takes null too."""
    origin = get_origin(hint)
    if origin is Annotated:
        base, *metadata = get_args(hint)
        words = [m.text for m in metadata if isinstance(m, Expect)]
        return (words[0], False) if words else _expectation(base)
    if origin in (Union, UnionType):
        want, _ = _expectation(next(a for a in get_args(hint) if a is not NoneType))
        return want, NoneType in get_args(hint)
    if origin is Literal:
        values = get_args(hint)
        if len(values) > 1 and all(isinstance(v, str) for v in values):
            return f"one of {', '.join(values)}", False
        return " or ".join(repr(v) for v in values), False
    return getattr(hint, "__name__", str(hint)), False
