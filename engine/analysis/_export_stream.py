"""Reading a monitor export from a file as a stream: memory follows the columns, not the JSON.

`json.loads` of a 59 MiB export built about 450 MB of dictionaries before a single row was
checked. Here ijson's event stream is read once: the small parts (format, version, times, the
monitor, counts) are assembled whole, each listing, event and poll is assembled, checked and
appended to the `ColumnBuilder`'s typed arrays, then dropped. The export we write puts the
format and version first; a document that puts its rows before its version is read twice (the
rows' meaning depends on the version), from the same file.

Which keys are the head and which the arrays is `export_format`'s; the checks, and the first
problem's `InvalidExport`, are those of `_export.py` (each part validated by its type).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

import ijson
from ijson.common import ObjectBuilder

from ._column_builder import ColumnBuilder
from ._errors import InvalidExport
from ._export import (
    EXPORTED_AT,
    add_event_row,
    add_listing_row,
    check_counts,
    check_header,
    check_monitor,
    poll_row,
)
from ._input import PollRow, last_observation, poll_marks
from .export_format import ARRAY_KEYS, HEAD_KEYS

if TYPE_CHECKING:
    from ._input import AnalysisInput

_OPENING = frozenset({"start_map", "start_array"})
_CLOSING = frozenset({"end_map", "end_array"})


class _Reader:
    """One pass over the event stream."""

    def __init__(self) -> None:
        self.header: dict[str, Any] = {}
        self.arrays: dict[str, bool] = {}  # key -> whether it held an array
        self.version: int | None = None  # known once format and version were seen
        self.rows_skipped = False
        self.builder = ColumnBuilder()
        self.polls: list[PollRow] = []
        self._counters = dict.fromkeys(ARRAY_KEYS, 0)

    def _header_value(self, key: str, value: Any) -> None:
        self.header[key] = value
        if "format" in self.header and "version" in self.header and self.version is None:
            self.version = check_header(self.header)

    def _row(self, array: str, row: Any) -> None:
        i = self._counters[array]
        self._counters[array] = i + 1
        if array == "polls":
            self.polls.append(poll_row(row, i))
        elif self.version is None:
            self.rows_skipped = True  # read again once the version is known
        elif array == "listings":
            add_listing_row(self.builder, row, i, version=self.version)
        else:
            add_event_row(self.builder, row, i, version=self.version)

    def read(self, stream: IO[bytes]) -> None:
        """Read the document's events: the root object's keys one level down, the items of
        its arrays two levels down; everything else is parsed and skipped, never assembled."""
        building: ObjectBuilder | None = None
        depth = 0
        skipping = 0  # nesting left of a value nobody reads
        key: str | None = None  # the root's key whose value comes next
        array: str | None = None  # the root's array whose items come next
        done: Callable[[Any], None] = self._ignore
        events = ijson.parse(stream, use_float=True)
        first = next(events, None)
        if first is None or first[:2] != ("", "start_map"):
            raise InvalidExport("document", "expected a JSON object")
        for _prefix, event, value in events:
            if building is not None:
                building.event(event, value)
                if event in _OPENING:
                    depth += 1
                elif event in _CLOSING:
                    depth -= 1
                if depth == 0:
                    done(building.value)
                    building = None
                continue
            if skipping:
                skipping += 1 if event in _OPENING else -1 if event in _CLOSING else 0
                continue
            if array is not None:  # an item of one of the root's arrays, or its end
                if event == "end_array":
                    array = None
                    continue
                if array != "polls" and self.version is None:
                    self.rows_skipped = True  # read again once the version is known
                    skipping = 1 if event in _OPENING else 0
                    continue
                done = _bind(self._row, array)
            elif event == "map_key":
                key = value
                continue
            elif event == "end_map":  # the root's end
                break
            elif key in ARRAY_KEYS:
                self.arrays[key] = event == "start_array"
                if event == "start_array":
                    array = key
                elif event == "start_map":
                    skipping = 1
                continue
            elif key in HEAD_KEYS:
                done = _bind(self._header_value, key)
            else:
                skipping = 1 if event in _OPENING else 0  # a key this reader does not use
                continue
            if event in _OPENING:
                building, depth = ObjectBuilder(), 1
                building.event(event, value)
            else:
                done(value)

    @staticmethod
    def _ignore(_value: Any) -> None:
        return None

    def finish(
        self, cls: type[AnalysisInput], now: datetime | None, window_days: float | None
    ) -> AnalysisInput:
        for key in ("format", "version"):
            if key not in self.header:
                check_header(self.header)  # names the missing one
        for key in ("exported_at", "monitor", *ARRAY_KEYS):
            if key not in self.header and key not in self.arrays:
                raise InvalidExport(key, "missing (truncated export?)")
        exported_at = EXPORTED_AT(self.header["exported_at"], "exported_at")
        for key in ARRAY_KEYS:
            if not self.arrays[key]:
                raise InvalidExport(key, "expected an array")
        check_counts(self.header.get("counts", {}))
        monitor = check_monitor(self.header["monitor"])
        listings = self.builder.listing_columns()
        polls = poll_marks(self.polls)
        if now is None:
            # The evidence describes the market up to its last observation (on the market's
            # clock), not the moment of the export: unsold listings are censored there.
            now = last_observation(listings, polls) or exported_at
        return cls(
            listings=listings,
            events=self.builder.event_columns(),
            now=now,
            window_days=window_days,
            source="import",
            monitor=monitor,
            polls=polls,
            category_names=self.builder.category_names(),
        )


def _bind(handler: Callable[[str, Any], None], key: str) -> Callable[[Any], None]:
    return lambda value: handler(key, value)


def read_export(
    cls: type[AnalysisInput],
    stream: IO[bytes],
    *,
    now: datetime | None,
    window_days: float | None,
) -> AnalysisInput:
    """The `AnalysisInput` of the export in `stream` (a binary file, read from where it is,
    and rewound for a second pass when needed); `InvalidExport` naming the first problem."""
    start = stream.tell()
    reader = _Reader()
    try:
        reader.read(stream)
        if reader.rows_skipped and reader.version is not None:
            stream.seek(start)
            again = _Reader()
            again.version = reader.version
            again.read(stream)
            reader = again
    except (ijson.JSONError, UnicodeDecodeError) as err:
        raise InvalidExport("document", f"not valid JSON (truncated?): {err}") from err
    return reader.finish(cls, now, window_days)
