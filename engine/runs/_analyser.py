"""The default analyser of runs and imports: niche analysis plus the four graph specs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

from ..analysis import AnalysisInput, PollRow, analyse, graph_specs, poll_marks
from ._task import Evidence

STORED_NICHES = 200


def analysis_document(
    data: AnalysisInput, *, include_likely_sales: bool | None = None
) -> dict[str, Any]:
    """Analyse an `AnalysisInput` into the JSON document stored for an analysis:
    the result (niches, alerts, notes) and `graphs`, the four Vega-Lite specs. Which sales
    count is `include_likely_sales` (sales by absence from the feed too, or not); None lets
    the evidence decide (`engine.analysis.choose_sales_basis`)."""
    result = analyse(data, include_likely_sales=include_likely_sales)
    # The stored document keeps the best niches, not all of them: a large market has tens
    # of thousands of sparse niches nobody pages through.
    document: dict[str, Any] = result.to_json(max_niches=STORED_NICHES)
    document["graphs"] = graph_specs(result)
    return document


def analyse_evidence(evidence: Evidence) -> dict[str, Any]:
    """Blocking and CPU-bound: called in a worker thread."""
    data = AnalysisInput.from_records(
        evidence.listings,
        evidence.events,
        now=None,  # the last observation, on the clock that stamped it (the market's)
        polls=poll_marks(PollRow.of(poll) for poll in evidence.polls),
    )
    return analysis_document(data, include_likely_sales=evidence.include_likely_sales)


@dataclass(frozen=True, slots=True)
class ExportedMonitor:
    """The monitor an export came from, as the export names it: the import is named after
    its label (its URL when it had none)."""

    url: str | None
    label: str | None


def analyse_import(
    export: IO[bytes], include_likely_sales: bool | None = None
) -> tuple[dict[str, Any], ExportedMonitor]:
    """An imported export's analysis document (`export`, a binary file read streaming) and
    the monitor it came from; `InvalidExport` if it is not a usable export.

    Blocking and CPU-bound: called in a worker thread. Makes no marketplace request.
    """
    data = AnalysisInput.from_export(export)
    monitor = data.monitor or {}
    url, label = monitor.get("url"), monitor.get("label")
    document = analysis_document(data, include_likely_sales=include_likely_sales)
    named = label.strip()[:200] if isinstance(label, str) else ""  # the column's length
    return document, ExportedMonitor(url=url if isinstance(url, str) else None, label=named or None)


def analyse_export(document: Any, include_likely_sales: bool | None = None) -> dict[str, Any]:
    """Analyse a monitor export (parsed JSON, version 1 or 2); `InvalidExport` if it is not
    one.

    Blocking and CPU-bound: called in a worker thread. Makes no marketplace request.
    """
    return analysis_document(
        AnalysisInput.from_export(document), include_likely_sales=include_likely_sales
    )
