"""The default analyser of runs and imports: niche analysis plus the four graph specs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..analysis import AnalysisInput, analyse, graph_specs
from ._task import Evidence

STORED_NICHES = 200


def analysis_document(data: AnalysisInput) -> dict[str, Any]:
    """Analyse an `AnalysisInput` into the JSON document stored for an analysis:
    the result (niches, alerts, notes) and `graphs`, the four Vega-Lite specs."""
    result = analyse(data)
    # The stored document keeps the best niches, not all of them: a large market has tens
    # of thousands of sparse niches nobody pages through.
    document: dict[str, Any] = result.to_json(max_niches=STORED_NICHES)
    document["graphs"] = graph_specs(result)
    return document


def analyse_evidence(evidence: Evidence) -> dict[str, Any]:
    """Blocking and CPU-bound: called in a worker thread."""
    data = AnalysisInput.from_records(evidence.listings, evidence.events, now=datetime.now(UTC))
    return analysis_document(data)


def analyse_export(document: Any) -> dict[str, Any]:
    """Analyse a monitor export (parsed JSON); `InvalidExport` if it is not one.

    Blocking and CPU-bound: called in a worker thread. Makes no marketplace request.
    """
    return analysis_document(AnalysisInput.from_export(document))
