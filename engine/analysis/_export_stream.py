"""Reading a monitor export from a file as a stream: memory follows the columns, not the JSON.

`json.loads` of a 59 MiB export built about 450 MB of dictionaries before a single row was
checked. Here ijson's event stream is read once: the small parts (format, version, times, the
monitor, counts) are assembled whole, each listing, event and poll is assembled, checked and
appended to the `ColumnBuilder`'s typed arrays, then dropped. The export we write puts the
format and version first; a document that puts its rows before its version is read twice (the
rows' meaning depends on the version), from the same file. Levels are counted as the events
come, and a document nested deeper than `MAX_DEPTH` is refused at its first value too deep:
what a read costs follows the file's size, never the square of its depth.

Which keys are the head and which the arrays is `export_format`'s; the checks, and the first
problem's `InvalidExport`, are those of `_export_checks.py` (each part validated by its type).
What comes out is the export's columns and parts (`ReadExport`); `AnalysisInput.from_export`
makes them an analysis' evidence.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import IO, Any, Final, Literal, cast

import ijson
from ijson.common import ObjectBuilder

from ._column_builder import ColumnBuilder
from ._columns import EventColumns, ListingColumns, PollMark, PollRow, last_observation, poll_marks
from ._errors import InvalidExport, quote
from ._export_checks import (
    EXPORTED_AT,
    add_event_row,
    add_listing_row,
    check_counts,
    check_header,
    check_monitor,
    poll_row,
)
from .export_format import ARRAY_KEYS, DOCUMENT_KEYS, HEAD_KEYS

_OPENING = frozenset({"start_map", "start_array"})
_CLOSING = frozenset({"end_map", "end_array"})

MAX_DEPTH: Final = 64
"""The deepest a document may nest (the root object is level 1). An export nests three levels
(the document, an array, a row) and a monitor's fields a few more; a deeper document is refused
as it is read, at the first value past the limit."""

# How much of the file the parser reads at a time. ijson's C backend parses a whole chunk into
# events before the first is handed over, so the chunk bounds what a pathological one costs
# (16 KiB of `[`: 16,000 events, about 1 MB) before the depth check sees it.
READ_CHUNK: Final = 16 * 1024


@dataclass(frozen=True, eq=False)
class ReadExport:
    """What an export holds, checked: its columns, the monitor's fields an analysis keeps,
    its polls, the names its listings gave each category, and when it last observed the
    market (its last poll or sighting, on the market's clock; its `exported_at` without
    either)."""

    listings: ListingColumns
    events: EventColumns
    monitor: dict[str, Any]
    polls: tuple[PollMark, ...]
    category_names: dict[int, str]
    last_observed: datetime


# What `_Reader._start` asks of the loop for the value that an event begins.
_Step = Literal["build", "skip", "end"] | None


class _Reader:
    """One pass over the event stream."""

    def __init__(self) -> None:
        self.header: dict[str, Any] = {}
        self.arrays: dict[str, bool] = {}  # key -> whether it held an array
        self.version: int | None = None  # known once format and version were seen
        self.rows_skipped = False
        self.builder = ColumnBuilder()
        self.polls: list[PollRow] = []
        self._key: str | None = None  # the root's key whose value comes next
        self._array: str | None = None  # the root's array whose items come next
        self._item = -1  # the index of the current item of `_array`
        self._done: Callable[[Any], None] = self._ignore  # takes the value being built

    def _header_value(self, key: str, value: Any) -> None:
        self.header[key] = value
        if "format" in self.header and "version" in self.header and self.version is None:
            self.version = check_header(self.header)

    def _row(self, array: str, i: int, row: Any) -> None:
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
        its arrays two levels down; everything else is parsed and skipped, never assembled.

        The events carry no path (ijson's `parse` joined one per event from the whole stack
        of levels: memory grew with the square of the depth, 2 GB for 60 KB nested 30,000
        deep); the level is counted here, and a document nested past `MAX_DEPTH` is refused
        (`InvalidExport` naming the root's key or row it is in) at its first value too deep.
        """
        building: ObjectBuilder | None = None
        skipping = False  # inside a value nobody reads
        level = 1  # the current event's (the root object is level 1)
        ends_at = 0  # the level that the value being built or skipped closes back to
        events = ijson.basic_parse(stream, use_float=True, buf_size=READ_CHUNK)
        first = next(events, None)
        if first is None or first[0] != "start_map":
            raise InvalidExport("document", "expected a JSON object")
        for event, value in events:
            if event in _OPENING:
                level += 1
                if level > MAX_DEPTH:
                    raise InvalidExport(self._where(), f"nested more than {MAX_DEPTH} levels deep")
            elif event in _CLOSING:
                level -= 1
            if building is not None:
                building.event(event, value)
                if level == ends_at:
                    self._done(building.value)
                    building = None
            elif skipping:
                skipping = level != ends_at
            elif (step := self._start(event, value)) == "end":
                break
            elif step is not None:  # a container begins: assembled for `_done`, or skipped
                ends_at = level - 1
                if step == "skip":
                    skipping = True
                else:
                    building = ObjectBuilder()
                    building.event(event, value)

    def _start(self, event: str, value: Any) -> _Step:
        """An event of the root object, or of one of its arrays: a key, an array's or the
        root's end, or the start of a value. A scalar is handed over here; a container is
        built (`_done` takes it) or skipped by the loop, as the answer says."""
        opening = event in _OPENING
        if self._array is not None:
            if event == "end_array":
                self._array = None
                return None
            self._item += 1
            if self._array != "polls" and self.version is None:
                self.rows_skipped = True  # read again once the version is known
                return "skip" if opening else None
            self._done = partial(self._row, self._array, self._item)
        elif event == "map_key":
            self._key = value
            return None
        elif event == "end_map":
            return "end"
        elif self._key in ARRAY_KEYS:
            self.arrays[self._key] = event == "start_array"
            if event == "start_array":
                self._array, self._item = self._key, -1
                return None
            return "skip" if opening else None
        elif self._key in HEAD_KEYS:
            self._done = partial(self._header_value, self._key)
        else:
            return "skip" if opening else None  # a key this reader does not use
        if opening:
            return "build"
        self._done(value)
        return None

    def _where(self) -> str:
        """Where the current event is, named only for a refusal: the root's array and item,
        or the root's key (quoted when it is not the format's: it is the sender's text, of
        any length)."""
        if self._array is not None:
            return f"{self._array}[{self._item}]"
        if self._key is None or self._key in DOCUMENT_KEYS:
            return self._key or "document"
        return f"document[{quote(self._key)}]"

    @staticmethod
    def _ignore(_value: Any) -> None:
        return None

    def finish(self) -> ReadExport:
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
        return ReadExport(
            listings=listings,
            events=self.builder.event_columns(),
            monitor=monitor,
            polls=polls,
            category_names=self.builder.category_names(),
            last_observed=last_observation(listings, polls) or exported_at,
        )


def read_export(document: Mapping[str, Any] | str | bytes | IO[bytes]) -> ReadExport:
    """An export's columns and parts: from a binary file (read streaming), its JSON text, or
    the parsed document (read the same way, so that every source meets the same checks).
    `InvalidExport` naming the first problem."""
    if isinstance(document, str):
        document = document.encode("utf-8", "surrogatepass")
    if isinstance(document, bytes):
        document = io.BytesIO(document)
    elif not hasattr(document, "read"):
        if not isinstance(document, Mapping):
            raise InvalidExport("document", "expected a JSON object")
        document = io.BytesIO(json.dumps(document).encode())
    return _read_stream(cast(IO[bytes], document))


def _read_stream(stream: IO[bytes]) -> ReadExport:
    """The export in `stream` (a binary file, read from where it is, and rewound for a second
    pass when needed)."""
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
    return reader.finish()
