"""The default analyser of runs and imports: niche analysis plus the four graph specs."""

from __future__ import annotations

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


def analyse_import(
    export: IO[bytes], include_likely_sales: bool | None = None
) -> tuple[dict[str, Any], str | None]:
    """An imported export's analysis document (`export`, a binary file read streaming) and
    the URL of the monitor it came from; `InvalidExport` if it is not a usable export.

    Blocking and CPU-bound: called in a worker thread. Makes no marketplace request.
    """
    data = AnalysisInput.from_export(export)
    url = data.monitor.get("url") if data.monitor else None
    document = analysis_document(data, include_likely_sales=include_likely_sales)
    return document, url if isinstance(url, str) else None


def analyse_export(document: Any, include_likely_sales: bool | None = None) -> dict[str, Any]:
    """Analyse a monitor export (parsed JSON, version 1 or 2); `InvalidExport` if it is not
    one.

    Blocking and CPU-bound: called in a worker thread. Makes no marketplace request.
    """
    return analysis_document(
        AnalysisInput.from_export(document), include_likely_sales=include_likely_sales
    )
