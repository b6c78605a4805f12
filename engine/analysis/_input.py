"""`AnalysisInput`: the evidence an analysis runs on, and where it is loaded from.

The evidence is columns (`_columns.py`: listings, their events, the monitor's polls) with the
moment they describe and the window to analyse. It is loaded from store records
(`from_records`, through `ColumnBuilder`), from a monitor export document (`from_export`,
read by `_export_stream.py`, each part checked by `_export_checks.py`) or built directly from
arrays (the benchmark does that).

Imports go one way: this module loads through the builder and the export reader; they build
columns (`_columns.py`) and know nothing of `AnalysisInput`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from store import ListingEventRecord, ListingRecord

from ._column_builder import ColumnBuilder
from ._columns import EventColumns, ListingColumns, PollMark, epoch, last_observation
from ._export_stream import read_export


@dataclass(frozen=True, eq=False)
class AnalysisInput:
    """The evidence of one analysis: listings, their events, the analysis time and window.

    `now` is the moment the evidence describes (a monitor's export time, a scrape's end);
    unsold listings are censored there. `window_days` bounds the analysis to the last N days
    (None: everything observed). `source` says where the evidence came from.
    """

    listings: ListingColumns
    events: EventColumns
    now: datetime
    window_days: float | None = None
    source: str = "records"
    monitor: Mapping[str, Any] = field(default_factory=dict)
    polls: tuple[PollMark, ...] = ()  # a monitor's polls, oldest first; () when unknown
    category_names: Mapping[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "polls", tuple(sorted(self.polls, key=lambda p: p.at)))
        if self.now.tzinfo is None:
            object.__setattr__(self, "now", self.now.replace(tzinfo=UTC))
        if self.window_days is not None and not self.window_days > 0:
            raise ValueError("window_days must be positive")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AnalysisInput):
            return False
        return (
            self.listings == other.listings
            and self.events == other.events
            and self.now == other.now
            and self.window_days == other.window_days
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def now_epoch(self) -> float:
        return epoch(self.now)

    @classmethod
    def from_records(
        cls,
        listings: Iterable[ListingRecord],
        events: Iterable[ListingEventRecord],
        *,
        now: datetime | None,
        window_days: float | None = None,
        polls: Iterable[PollMark] = (),
    ) -> AnalysisInput:
        """Columns from store records (a monitor's history, or one scrape with no events).
        `now` None: the last observation (`last_observation`)."""
        builder = ColumnBuilder()
        for r in listings:
            likely = r.state_evidence == "absence" and r.state == "sold"
            builder.add_listing(r, likely=likely, category_name=r.category_name)
        for e in events:
            builder.add_event(e, likely=e.evidence == "absence")
        listing_columns = builder.listing_columns()
        polls = tuple(polls)
        return cls(
            listings=listing_columns,
            events=builder.event_columns(),
            now=now or last_observation(listing_columns, polls) or datetime.now(UTC),
            window_days=window_days,
            source="records",
            polls=polls,
            category_names=builder.category_names(),
        )

    @classmethod
    def from_export(
        cls,
        document: Mapping[str, Any] | str | bytes | IO[bytes],
        *,
        now: datetime | None = None,
        window_days: float | None = None,
    ) -> AnalysisInput:
        """Columns from a monitor export (the parsed document, or its JSON text).

        Raises `InvalidExport` naming the first problem (wrong format or version, missing or
        mistyped fields, truncated JSON). `now` defaults to the export's `exported_at`.
        """
        export = read_export(document)
        return cls(
            listings=export.listings,
            events=export.events,
            # The evidence describes the market up to its last observation (on the market's
            # clock), not the moment of the export: unsold listings are censored there.
            now=now or export.last_observed,
            window_days=window_days,
            source="import",
            monitor=export.monitor,
            polls=export.polls,
            category_names=export.category_names,
        )
