"""What runs and analyses are called where people and agents read them: never a raw id or URL.

The policy: a name the person gave the run wins; else a monitor's run is named after its
monitor's label; else an import after the label of the monitor it was exported from. What
has no label (a monitor started without a name, a catalogue run) is named after what its
catalogue URL asks for, in words (`catalogue_name`): a URL is an address, not a name, and in
a title it reads as noise. The REST lists, MCP tools and web pages share it.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, urlsplit

from store import AnalysisRecord, MonitorRecord, RunRecord, Store

DELETED_MONITOR = "A deleted monitor's history"
IMPORTED = "An imported monitor export"
# Filters of a catalogue URL that select ids, and what one of them is called.
_ID_FILTERS = {
    "catalog": ("category", "categories"),
    "catalog_ids": ("category", "categories"),
    "brand_ids": ("brand", "brands"),
    "size_ids": ("size", "sizes"),
    "status_ids": ("condition", "conditions"),
    "color_ids": ("colour", "colours"),
    "material_ids": ("material", "materials"),
}


def catalogue_name(url: str | None) -> str:
    """A catalogue URL in words: its site and what it filters, e.g. `Catalogue of vinted.fr:
    “nike”, 2 categories, priced 10 to 50`; `A catalogue page` for one that cannot be read."""
    try:
        parts = urlsplit(url or "")
        host = (parts.hostname or "").removeprefix("www.")
        port = parts.port
    except ValueError:
        return "A catalogue page"
    if not host:
        return "A catalogue page"
    site = f"{host}:{port}" if port else host
    words = _filters_in_words(parse_qsl(parts.query), parts.path)
    return f"Catalogue of {site}" + (": " + ", ".join(words) if words else "")


def _filters_in_words(query: list[tuple[str, str]], path: str) -> list[str]:
    """What a catalogue's query asks for: the search, how many of each id filter, prices."""
    words: list[str] = []
    counts: dict[str, int] = {}
    prices: dict[str, str] = {}
    # A category in the path (`/catalog/1904-women-shoes`) counts like one in the query.
    slug = path.rstrip("/").rsplit("/", 1)[-1] if path.rstrip("/") != "/catalog" else ""
    if slug and slug[0].isdigit():
        counts["catalog"] = 1
    for key, value in query:
        key = key.removesuffix("[]")
        if key == "search_text" and value.strip():
            words.append(f"“{value.strip()[:40]}”")
        elif key in _ID_FILTERS:
            counts[_ID_FILTERS[key][0]] = counts.get(_ID_FILTERS[key][0], 0) + 1
        elif key in ("price_from", "price_to"):
            prices[key] = value
    categories = counts.pop("catalog", 0) + counts.pop("category", 0)
    if categories:
        words.append("1 category" if categories == 1 else f"{categories} categories")
    for one, many in dict(_ID_FILTERS.values()).items():
        if one in counts:
            words.append(f"{counts[one]} {one if counts[one] == 1 else many}")
    if prices:
        low, high = prices.get("price_from"), prices.get("price_to")
        words.append(
            f"priced {low} to {high}"
            if low and high
            else f"priced from {low}"
            if low
            else f"priced up to {high}"
        )
    return words


def run_title(run: RunRecord, monitor: MonitorRecord | None) -> str:
    """The name of `run`; `monitor` is its monitor (None for a URL run or a deleted one)."""
    if run.label:
        return run.label
    if run.source == "monitor":
        return monitor_title(monitor) if monitor is not None else DELETED_MONITOR
    return catalogue_name(run.url)


def monitor_title(monitor: MonitorRecord) -> str:
    """A monitor's label, else what its catalogue asks for."""
    return monitor.label or catalogue_name(monitor.url)


def analysis_title(
    analysis: AnalysisRecord, run: RunRecord | None, monitor: MonitorRecord | None
) -> str:
    """The name of `analysis`: its run's, or for an import its exported monitor's label
    (else what that monitor's catalogue asked for); `run` and `monitor` as found (None when
    gone or never)."""
    if run is not None:
        return run_title(run, monitor)
    if analysis.source == "import":
        if analysis.source_label:
            return analysis.source_label
        return catalogue_name(analysis.source_url) if analysis.source_url else IMPORTED
    if analysis.source == "monitor":
        return DELETED_MONITOR
    return catalogue_name(analysis.source_url)


async def monitors_by_id(store: Store, workspace_id: str) -> dict[str, MonitorRecord]:
    """The workspace's monitors by id (one query: a workspace holds a handful)."""
    return {m.id: m for m in await store.monitors.in_workspace(workspace_id)}


async def run_titles(store: Store, workspace_id: str, runs: Iterable[RunRecord]) -> dict[str, str]:
    """Run id -> name, for a page or a list of runs."""
    runs = list(runs)
    monitors = await monitors_by_id(store, workspace_id) if any(r.monitor_id for r in runs) else {}
    return {r.id: run_title(r, monitors.get(r.monitor_id or "")) for r in runs}


async def analysis_titles(
    store: Store, workspace_id: str, analyses: Iterable[AnalysisRecord]
) -> dict[str, str]:
    """Analysis id -> name, reading each analysis' run (a list is one page: at most 100)."""
    analyses = list(analyses)
    monitors: dict[str, MonitorRecord] | None = None
    titles: dict[str, str] = {}
    for analysis in analyses:
        run = await store.runs.get(analysis.run_id, workspace_id) if analysis.run_id else None
        if run is not None and run.monitor_id and monitors is None:
            monitors = await monitors_by_id(store, workspace_id)
        monitor = (monitors or {}).get(run.monitor_id or "") if run is not None else None
        titles[analysis.id] = analysis_title(analysis, run, monitor)
    return titles


async def run_and_monitor(
    store: Store, analysis: AnalysisRecord
) -> tuple[RunRecord | None, MonitorRecord | None]:
    """The run that made `analysis` and that run's monitor, as they are now (None when gone,
    or never: an import has no run, a URL run no monitor)."""
    if not analysis.run_id:
        return None, None
    run = await store.runs.get(analysis.run_id, analysis.workspace_id)
    if run is None or not run.monitor_id:
        return run, None
    return run, await store.monitors.get(run.monitor_id, analysis.workspace_id)


async def title_of_analysis(store: Store, analysis: AnalysisRecord) -> str:
    """The name of one analysis."""
    run, monitor = await run_and_monitor(store, analysis)
    return analysis_title(analysis, run, monitor)
