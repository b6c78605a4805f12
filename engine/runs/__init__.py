"""Runs: one analysis each (a scrape of a catalogue URL, a monitor's history, an import),
executed as a task the `RunManager` owns and can cancel, its result written by the analyser."""

from ._analyser import analyse_evidence, analyse_export, analyse_import
from ._manager import RunManager, RunNotCancellable, RunStillRunning
from ._task import Analyser, Evidence, monitor_evidence

__all__ = [
    "Analyser",
    "Evidence",
    "RunManager",
    "RunNotCancellable",
    "RunStillRunning",
    "analyse_evidence",
    "analyse_export",
    "analyse_import",
    "monitor_evidence",
]
