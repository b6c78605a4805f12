"""What runs and analyses are called where people and agents read them: never a raw id.

The policy: a name the person gave the run wins; else a monitor's run is named after its
monitor (the monitor's name, else its catalogue URL); else a catalogue run or an import is
named after the catalogue URL it read. The REST lists, MCP tools and web pages share it.
"""

from __future__ import annotations

from collections.abc import Iterable

from api.services import services
from store import AnalysisRecord, MonitorRecord, RunRecord

DELETED_MONITOR = "A deleted monitor's history"


def run_title(run: RunRecord, monitor: MonitorRecord | None) -> str:
    """The name of `run`; `monitor` is its monitor (None for a URL run or a deleted one)."""
    if run.label:
        return run.label
    if run.source == "monitor":
        return (monitor.label or monitor.url) if monitor is not None else DELETED_MONITOR
    return run.url or "A catalogue page"


def analysis_title(
    analysis: AnalysisRecord, run: RunRecord | None, monitor: MonitorRecord | None
) -> str:
    """The name of `analysis`: its run's, or the catalogue URL it read (an import's export
    names its monitor's URL); `run` and `monitor` as found (None when gone or never)."""
    if run is not None:
        return run_title(run, monitor)
    if analysis.source_url:
        return analysis.source_url
    if analysis.source == "monitor":
        return DELETED_MONITOR
    if analysis.source == "import":
        return "An imported monitor export"
    return "A catalogue page"


async def monitors_by_id(workspace_id: str) -> dict[str, MonitorRecord]:
    """The workspace's monitors by id (one query: a workspace holds a handful)."""
    return {m.id: m for m in await services().store.monitors.in_workspace(workspace_id)}


async def run_titles(workspace_id: str, runs: Iterable[RunRecord]) -> dict[str, str]:
    """Run id -> name, for a page or a list of runs."""
    runs = list(runs)
    monitors = await monitors_by_id(workspace_id) if any(r.monitor_id for r in runs) else {}
    return {r.id: run_title(r, monitors.get(r.monitor_id or "")) for r in runs}


async def analysis_titles(workspace_id: str, analyses: Iterable[AnalysisRecord]) -> dict[str, str]:
    """Analysis id -> name, reading each analysis' run (a list is one page: at most 100)."""
    analyses = list(analyses)
    store = services().store
    monitors: dict[str, MonitorRecord] | None = None
    titles: dict[str, str] = {}
    for analysis in analyses:
        run = await store.runs.get(analysis.run_id, workspace_id) if analysis.run_id else None
        if run is not None and run.monitor_id and monitors is None:
            monitors = await monitors_by_id(workspace_id)
        monitor = (monitors or {}).get(run.monitor_id or "") if run is not None else None
        titles[analysis.id] = analysis_title(analysis, run, monitor)
    return titles


async def run_and_monitor(
    analysis: AnalysisRecord,
) -> tuple[RunRecord | None, MonitorRecord | None]:
    """The run that made `analysis` and that run's monitor, as they are now (None when gone,
    or never: an import has no run, a URL run no monitor)."""
    if not analysis.run_id:
        return None, None
    store = services().store
    run = await store.runs.get(analysis.run_id, analysis.workspace_id)
    if run is None or not run.monitor_id:
        return run, None
    return run, await store.monitors.get(run.monitor_id, analysis.workspace_id)


async def title_of_analysis(analysis: AnalysisRecord) -> str:
    """The name of one analysis."""
    run, monitor = await run_and_monitor(analysis)
    return analysis_title(analysis, run, monitor)
