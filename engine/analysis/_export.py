"""Reading a monitor export document (format `nichescope.monitor-export`, version 1 or 2).

Version 2 says how each state was established (`state_evidence` on listings, `evidence` on
events); a sale by absence is a likely sale. Version 1 has no evidence: its sales are taken as
confirmed (before version 2 every state came from the item detail API).

Validation is strict about what the analysis uses and lenient about the rest: unknown fields
are ignored, every field the analysis reads is type-checked, and the first problem raises
`InvalidExport` naming where it is (``listings[12].first_seen_at``).
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import IO, TYPE_CHECKING, Any, cast

from ._column_builder import ColumnBuilder
from ._errors import InvalidExport
from ._input import EVENT_KINDS, STATES, PollRow, epoch

if TYPE_CHECKING:
    from ._input import AnalysisInput

EXPORT_FORMAT = "nichescope.monitor-export"
EXPORT_VERSION = 2
READABLE_VERSIONS = (1, 2)
EVIDENCE = ("detail_api", "item_page", "absence")


def input_from_export(
    cls: type[AnalysisInput],
    document: Mapping[str, Any] | str | bytes | IO[bytes],
    *,
    now: datetime | None,
    window_days: float | None,
) -> AnalysisInput:
    """Columns from an export: a binary file (read streaming), its JSON text, or the parsed
    document (read the same way, so that every source meets the same checks)."""
    from ._export_stream import read_export

    if isinstance(document, str):
        document = document.encode("utf-8", "surrogatepass")
    if isinstance(document, bytes):
        document = io.BytesIO(document)
    elif not hasattr(document, "read"):
        if not isinstance(document, Mapping):
            raise InvalidExport("document", "expected a JSON object")
        document = io.BytesIO(json.dumps(document).encode())
    return read_export(cls, cast(IO[bytes], document), now=now, window_days=window_days)


def check_header(header: Mapping[str, Any]) -> bool:
    """The format and version (raising `InvalidExport` if wrong); whether the export carries
    version 2's evidence."""
    if header.get("format") != EXPORT_FORMAT:
        raise InvalidExport("format", f"expected {EXPORT_FORMAT!r}, got {header.get('format')!r}")
    version = header.get("version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise InvalidExport("version", f"expected 1 or {EXPORT_VERSION}, got {version!r}")
    return bool(version >= 2)


def check_counts(counts: object) -> None:
    if not isinstance(counts, Mapping) or not all(_is_int64(n) for n in counts.values()):
        raise InvalidExport("counts", "expected an object of integers")


def add_listing_row(builder: ColumnBuilder, row: object, i: int, *, evidence: bool) -> None:
    r = _Row(row, f"listings[{i}]")
    state = r.enum("state", STATES)
    likely = evidence and _listing_evidence(r) == "absence" and state == "sold"
    builder.add_listing(
        item_id=r.integer("item_id"),
        title=r.opt_str("title"),
        brand=r.opt_str("brand"),
        size=r.opt_str("size"),
        condition=r.opt_str("condition"),
        category_id=r.opt_int("category_id"),
        price=r.opt_decimal("price"),
        currency=r.opt_str("currency"),
        favourites=r.opt_int("favourites"),
        listed_at=r.opt_time("listed_at"),
        first_seen_at=r.time("first_seen_at"),
        last_seen_at=r.time("last_seen_at"),
        state=state,
        state_changed_at=r.time("state_changed_at"),
        likely=likely,
        category_name=r.opt_str("category_name") if evidence else None,
    )
    r.opt_int("views")  # not analysed, but part of the export's shape
    r.absent_or_bool("in_feed")


def add_event_row(builder: ColumnBuilder, row: object, i: int, *, evidence: bool) -> None:
    r = _Row(row, f"events[{i}]")
    r.integer("id")
    builder.add_event(
        item_id=r.integer("item_id"),
        kind=r.enum("kind", EVENT_KINDS),
        from_state=r.opt_enum("from_state", STATES),
        to_state=r.opt_enum("to_state", STATES),
        price=r.opt_decimal("price"),
        at=r.time("at"),
        likely=evidence and r.opt_enum("evidence", EVIDENCE) == "absence",
    )
    r.opt_int("favourites")
    r.opt_int("views")


def poll_row(row: object, i: int) -> PollRow:
    """A poll, checked against the export schema (the analysis uses only its times, error and
    clock; an import that accepted any shape there would accept what no export contained)."""
    r = _Row(row, f"polls[{i}]")
    r.text("id")
    r.time("started_at")
    r.time("finished_at")
    for key in ("items", "new", "changed"):
        r.integer(key)
    for key in ("pages", "confirmed", "duration_ms"):
        r.absent_or_int(key)
    error = r.opt_str("error")
    r.opt_time("market_at")  # version 2 since the market's clock; absent before
    clock = r.opt_enum("clock", ("market", "service"))
    assert isinstance(row, Mapping)
    market_at = row.get("market_at")
    return PollRow(
        started_at=parse_datetime(row["started_at"], f"polls[{i}]"),
        market_at=None if market_at is None else parse_datetime(market_at, f"polls[{i}]"),
        error=error,
        clock=clock,
    )


def check_monitor(monitor: object) -> dict[str, Any]:
    """The monitor object, checked; the fields an analysis keeps of it."""
    m = _Row(monitor, "monitor")
    m.text("id")
    m.text("url")
    m.enum("status", ("paused", "active", "error"))
    m.integer("interval_seconds")
    m.time("created_at")
    m.opt_time("bootstrapped_at")
    m.opt_time("last_poll_at")
    m.opt_str("label")
    m.opt_str("last_error_kind")
    assert isinstance(monitor, Mapping)
    return {k: v for k, v in monitor.items() if k in ("id", "label", "url")}


def _listing_evidence(r: _Row) -> str | None:
    """A version 2 listing's evidence, its other version 2 fields checked on the way."""
    for key in ("condition_raw", "category_name"):
        r.opt_str(key)
    for key in ("total_price", "service_fee"):
        r.opt_decimal(key)
    r.absent_or_bool("promoted")
    r.absent_or_count("absent_polls")
    return r.opt_enum("state_evidence", EVIDENCE)


# The export's decimal strings, as its schema states them (no exponents, no NaN).
_DECIMAL = re.compile(r"-?\d+(\.\d+)?")


def _is_int64(value: object) -> bool:
    """An integer the analysis' int64 columns can hold (JSON integers are unbounded)."""
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


def parse_datetime(value: object, where: str) -> datetime:
    if not isinstance(value, str):
        raise InvalidExport(where, f"expected an ISO-8601 timestamp, got {type(value).__name__}")
    try:
        return datetime.fromisoformat(value)
    except ValueError as err:
        raise InvalidExport(where, f"not an ISO-8601 timestamp: {value!r}") from err


class _Row:
    __slots__ = ("_row", "_where")

    def __init__(self, row: object, where: str) -> None:
        if not isinstance(row, Mapping):
            raise InvalidExport(where, f"expected an object, got {type(row).__name__}")
        self._row = row
        self._where = where

    def _get(self, key: str, required: bool) -> Any:
        if key not in self._row:
            if required:
                raise InvalidExport(f"{self._where}.{key}", "missing")
            return None
        return self._row[key]

    def _fail(self, key: str, want: str, value: object) -> InvalidExport:
        return InvalidExport(f"{self._where}.{key}", f"expected {want}, got {value!r}")

    def integer(self, key: str) -> int:
        value = self._get(key, True)
        if not _is_int64(value):
            raise self._fail(key, "a 64-bit integer", value)
        return int(value)

    def opt_int(self, key: str) -> int | None:
        value = self._get(key, False)
        if value is not None and not _is_int64(value):
            raise self._fail(key, "a 64-bit integer or null", value)
        return None if value is None else int(value)

    def absent_or_int(self, key: str) -> None:
        """An optional key which, when present, holds an integer (not null)."""
        if key in self._row and not _is_int64(self._row[key]):
            raise self._fail(key, "a 64-bit integer", self._row[key])

    def absent_or_count(self, key: str) -> None:
        """An optional key which, when present, holds an integer of at least 0."""
        if key in self._row and not (_is_int64(self._row[key]) and self._row[key] >= 0):
            raise self._fail(key, "an integer of at least 0", self._row[key])

    def absent_or_bool(self, key: str) -> None:
        if key in self._row and not isinstance(self._row[key], bool):
            raise self._fail(key, "true or false", self._row[key])

    def text(self, key: str) -> str:
        value = self._get(key, True)
        if not isinstance(value, str):
            raise self._fail(key, "a string", value)
        return value

    def opt_str(self, key: str) -> str | None:
        value = self._get(key, False)
        if value is not None and not isinstance(value, str):
            raise self._fail(key, "a string or null", value)
        return value

    def opt_decimal(self, key: str) -> float | None:
        value = self._get(key, False)
        if value is None:
            return None
        if not isinstance(value, str) or not _DECIMAL.fullmatch(value):
            raise self._fail(key, "a decimal string (like 12.50) or null", value)
        try:
            number = float(Decimal(value))
        except InvalidOperation as err:
            raise self._fail(key, "a decimal string", value) from err
        if not math.isfinite(number):
            raise self._fail(key, "a finite decimal", value)
        return number

    def time(self, key: str) -> float:
        return epoch(parse_datetime(self._get(key, True), f"{self._where}.{key}"))

    def opt_time(self, key: str) -> float | None:
        value = self._get(key, False)
        return None if value is None else epoch(parse_datetime(value, f"{self._where}.{key}"))

    def enum(self, key: str, allowed: tuple[str, ...]) -> str:
        value = self._get(key, True)
        if value not in allowed:
            raise self._fail(key, f"one of {', '.join(allowed)}", value)
        return str(value)

    def opt_enum(self, key: str, allowed: tuple[str, ...]) -> str | None:
        value = self._get(key, False)
        if value is not None and value not in allowed:
            raise self._fail(key, f"one of {', '.join(allowed)} or null", value)
        return value  # type: ignore[no-any-return]
