"""Niche analysis: columnar evidence in, ranked niches, alerts and graphs out.

Pure computation (no I/O): feed it store records, a monitor export or arrays, call `analyse`
(CPU-bound: run it in a worker thread), then `graph_specs` / `render_svg` for the graphs.
"""

from ._analyse import analyse
from ._basis import (
    SalesBasis,
    SalesBasisChoice,
    SalesEvidence,
    choose_sales_basis,
    sales_evidence,
    with_sales_basis,
)
from ._columns import EventColumns, ListingColumns, PollMark, PollRow, poll_marks
from ._errors import InvalidExport
from ._graph_labels import place_labels
from ._input import AnalysisInput
from ._niche_records import (
    SELL_THROUGH_DEFINITION,
    KMCurve,
    NicheKey,
    NicheStats,
    PriceSummary,
    ScoreParts,
    Trend,
)
from ._result import Alert, AnalysisResult, Coverage, FlowDay, Gap, Window
from ._stats import kaplan_meier, wilson
from ._trust_floor import TRUST_FLOOR, EvidenceDepth, TrustFloor, evidence_depth
from .alerts import AlertRules, MarketRates
from .export_format import EXPORT_FORMAT, EXPORT_VERSION
from .graphs import CURVES, GRAPH_NAMES, graph_specs, render_svg

__all__ = [
    "CURVES",
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "GRAPH_NAMES",
    "SELL_THROUGH_DEFINITION",
    "TRUST_FLOOR",
    "Alert",
    "AlertRules",
    "AnalysisInput",
    "AnalysisResult",
    "Coverage",
    "EventColumns",
    "EvidenceDepth",
    "FlowDay",
    "Gap",
    "InvalidExport",
    "KMCurve",
    "ListingColumns",
    "MarketRates",
    "NicheKey",
    "NicheStats",
    "PollMark",
    "PollRow",
    "PriceSummary",
    "SalesBasis",
    "SalesBasisChoice",
    "SalesEvidence",
    "ScoreParts",
    "Trend",
    "TrustFloor",
    "Window",
    "analyse",
    "choose_sales_basis",
    "evidence_depth",
    "graph_specs",
    "kaplan_meier",
    "place_labels",
    "poll_marks",
    "render_svg",
    "sales_evidence",
    "wilson",
    "with_sales_basis",
]
