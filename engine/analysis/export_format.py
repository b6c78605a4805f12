"""The monitor export format (`nichescope.monitor-export`), defined once.

The API writes it (`api/monitors/export.py` streams version 2) and serves its JSON Schema; the
analysis reads it back (`_export.py`, `_export_stream.py`: versions 1 and 2). Both take what
they know of it from here: its name and versions, the order of the document's keys, and the
pydantic models of its parts. The import validates each part with these models (one listing,
event or poll at a time, as the stream yields it), and the served JSON Schema is generated
from the same models (`export_json_schema`), so what is documented is what is checked.

Version 2 says how each state was established (`state_evidence` on listings, `evidence` on
events: a sale by absence is a likely sale) and adds today's listing fields. Version 1 has
neither; its rows are read with the version 1 models, which do not know those fields (a
version 1 document that holds them has them ignored, as when version 1 was current).

Strict about what the analysis uses, lenient about the rest: unknown fields are ignored;
integers are JSON integers that fit 64 bits (not `true`, not `1.0`); decimals are decimal
strings (no exponent, no NaN); timestamps are ISO-8601 strings (`datetime.fromisoformat`) of a
moment in the years 1 to 9999 in UTC; a field with a default may be absent, and is null only
where its type says so. A refused value's `InvalidExport` says what was expected in the words of
its type's `Expect`, quoting at most the value's first 80 characters.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    Strict,
    StringConstraints,
)
from pydantic.json_schema import DEFAULT_REF_TEMPLATE, GenerateJsonSchema, JsonSchemaValue

from ._errors import quote

# The format and its versions ----------------------------------------------------------------

ExportFormat = Literal["nichescope.monitor-export"]
_Written = Literal[2]  # the version the API writes
_Readable = Literal[1, _Written]  # the versions the import reads
EXPORT_FORMAT: Final[str] = get_args(ExportFormat)[0]
EXPORT_VERSION: Final[int] = get_args(_Written)[0]
READABLE_VERSIONS: Final[tuple[int, ...]] = get_args(_Readable)

SCHEMA_TITLE: Final = "Nichescope monitor export"


@dataclass(frozen=True, slots=True)
class Expect:
    """What a type takes, in words: the message of a value it refuses ("expected ..., got
    ...", with "or null" where null is taken too). Metadata pydantic ignores."""

    text: str


class Refused(ValueError):
    """A refusal that says all there is to say (its message is `InvalidExport.problem`); any
    other refusal is said with the type's `Expect`."""


def _not_a_bool(value: object) -> object:
    """`Literal[1, 2]` takes `True` for 1 (they compare equal); a JSON `true` is no version."""
    if isinstance(value, bool):
        raise ValueError("a boolean is no version")
    return value


def _timestamp(value: object) -> datetime:
    if not isinstance(value, str):
        raise Refused(f"expected an ISO-8601 timestamp, got {type(value).__name__}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise Refused(f"not an ISO-8601 timestamp: {quote(value)}") from None
    if not _in_range(moment):
        raise Refused(f"out of range (years 1 to 9999, in UTC): {quote(value)}")
    return moment


def _in_range(moment: datetime) -> bool:
    """Whether the analysis can hold `moment` (naive: UTC) as epoch seconds and turn them back
    into a date. `9999-12-31T23:59:59-23:59` parses, but is in the year 10000 in UTC, and
    `9999-12-31T23:59:59.999999` rounds into it as a float: either failed the import with a
    500 where the analysis went back from seconds to dates."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    try:
        datetime.fromtimestamp(aware.timestamp(), UTC)
    except (OverflowError, ValueError, OSError):
        return False
    return True


# The export's decimal strings: no exponents, no NaN (`fullmatch`: `$` would take a newline).
DECIMAL_PATTERN: Final = r"^-?\d+(\.\d+)?$"
_DECIMAL = re.compile(DECIMAL_PATTERN)


def _decimal(value: object) -> float:
    if not isinstance(value, str) or not _DECIMAL.fullmatch(value):
        raise ValueError("not a decimal string")
    number = float(value)  # correctly rounded, as float(Decimal(value))
    if not math.isfinite(number):
        raise Refused(f"expected a finite decimal, got {quote(value)}")
    return number


# The types of the export's values -------------------------------------------------------------

# Integers the analysis' int64 columns hold (JSON integers are unbounded).
Int64 = Annotated[int, Strict(), Field(ge=-(2**63), le=2**63 - 1), Expect("a 64-bit integer")]
Count = Annotated[int, Strict(), Field(ge=0, le=2**63 - 1), Expect("an integer of at least 0")]
Text = Annotated[str, Strict(), Expect("a string")]
Flag = Annotated[bool, Strict(), Expect("true or false")]
Timestamp = Annotated[datetime, PlainValidator(_timestamp, json_schema_input_type=datetime)]
DecimalString = Annotated[
    float,  # what the analysis reads; the document holds the string
    PlainValidator(
        _decimal, json_schema_input_type=Annotated[str, StringConstraints(pattern=DECIMAL_PATTERN)]
    ),
    Expect("a decimal string (like 12.50)"),
]
Counts = dict[str, Int64]
ExportVersion = Annotated[_Written, BeforeValidator(_not_a_bool)]
ReadableVersion = Annotated[_Readable, BeforeValidator(_not_a_bool)]

State = Literal["open", "reserved", "sold", "deleted"]
EventKind = Literal["new", "state", "price", "counts"]
Evidence = Literal["detail_api", "item_page", "absence"]
MonitorStatus = Literal["paused", "active", "error"]
Clock = Literal["market", "service"]


# The document's parts ---------------------------------------------------------------------------


def absent() -> Any:
    """The default of a field that may be absent but, when present, is never null (checked,
    not read: absent, its Python value is None). The schema lists it as optional, not
    nullable."""
    return Field(default=None)


class ExportPart(BaseModel):
    """A part of the export: its fields validated, any other field ignored."""

    model_config = ConfigDict(extra="ignore")


class ExportMonitor(ExportPart):
    """The monitor the history is of (the export writes the store's other fields too)."""

    id: Text
    label: Text | None = None
    url: Text
    status: MonitorStatus
    interval_seconds: Int64
    created_at: Timestamp
    bootstrapped_at: Timestamp | None = None
    last_poll_at: Timestamp | None = None
    last_error_kind: Text | None = None


class ExportListingV1(ExportPart):
    """A listing of a version 1 export."""

    item_id: Int64
    title: Text | None = None
    brand: Text | None = None
    size: Text | None = None
    condition: Text | None = None
    category_id: Int64 | None = None
    price: DecimalString | None = None
    currency: Text | None = None
    favourites: Int64 | None = None
    views: Int64 | None = None
    listed_at: Timestamp | None = None
    first_seen_at: Timestamp
    last_seen_at: Timestamp
    state: State
    state_changed_at: Timestamp
    in_feed: Flag = absent()


class ExportListing(ExportListingV1):
    """A listing as last observed; `state_evidence` says how its state was established
    (`absence`: sold by absence from the feed, a likely sale)."""

    condition_raw: Text | None = None
    category_name: Text | None = None
    total_price: DecimalString | None = None
    service_fee: DecimalString | None = None
    promoted: Flag = absent()
    state_evidence: Evidence | None = None
    absent_polls: Count = absent()


class ExportEventV1(ExportPart):
    """A listing event of a version 1 export."""

    id: Int64
    item_id: Int64
    kind: EventKind
    from_state: State | None = None
    to_state: State | None = None
    price: DecimalString | None = None
    favourites: Int64 | None = None
    views: Int64 | None = None
    at: Timestamp


class ExportEvent(ExportEventV1):
    """A listing event; a state event's `evidence` says how the new state was established."""

    evidence: Evidence | None = None


class ExportPoll(ExportPart):
    """A poll: when it ran (`market_at`: on the market's clock, when known) and what it saw."""

    id: Text
    started_at: Timestamp
    finished_at: Timestamp
    pages: Int64 = absent()
    items: Int64
    new: Int64
    changed: Int64
    confirmed: Int64 = absent()
    duration_ms: Int64 = absent()
    error: Text | None = None
    market_at: Timestamp | None = None
    clock: Clock | None = None


class MonitorExport(ExportPart):
    # No docstring: the served schema's top level has a title and no description.
    model_config = ConfigDict(title=SCHEMA_TITLE)

    format: ExportFormat
    version: ExportVersion
    exported_at: Timestamp
    monitor: ExportMonitor
    counts: Counts = absent()
    listings: list[ExportListing]
    events: list[ExportEvent]
    polls: list[ExportPoll]


# The document's keys in the order they are written: the head (format and version first, so a
# reader knows the version before any row), then the arrays, one row at a time.
DOCUMENT_KEYS: Final[tuple[str, ...]] = tuple(MonitorExport.model_fields)
ARRAY_KEYS: Final[tuple[str, ...]] = tuple(
    k for k, field in MonitorExport.model_fields.items() if get_origin(field.annotation) is list
)
HEAD_KEYS: Final[tuple[str, ...]] = tuple(k for k in DOCUMENT_KEYS if k not in ARRAY_KEYS)


def export_head(
    exported_at: datetime, monitor: Mapping[str, Any], counts: Mapping[str, int]
) -> dict[str, Any]:
    """The document's head as the writer writes it (`HEAD_KEYS`, in order)."""
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": exported_at,
        "monitor": monitor,
        "counts": counts,
    }


# The JSON Schema ------------------------------------------------------------------------------


class _ExportJsonSchema(GenerateJsonSchema):
    """The models' JSON Schema without a title on every property (its name says it) nor
    defaults (a field with one is optional: `absent()`'s None is no value it takes)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: Any) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])


def export_json_schema(ref_template: str = DEFAULT_REF_TEMPLATE) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the document the API writes, generated from the
    models the import validates with: one document, its parts under `$defs` (`ref_template`
    places them elsewhere, e.g. among an OpenAPI document's components)."""
    schema = MonitorExport.model_json_schema(
        ref_template=ref_template, schema_generator=_ExportJsonSchema
    )
    return {"$schema": _ExportJsonSchema.schema_dialect, **schema}
