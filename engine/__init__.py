"""Engine: supervised actors (monitors, runs) and niche analysis."""

from ._engine import Engine, EngineBusy, EngineSettings
from .analysis import InvalidExport, render_svg
from .cluster import ClusterSettings, LeaseKeeper
from .monitors._actor import MonitorPolicy
from .monitors._commands import ActorStatus, GetStatus, Pause, PollNow, Resume, Stop
from .monitors._market import CatalogueUrlRefused, Feed, Marketplace, SuspectedBlock
from .monitors._poll import ConfirmPolicy
from .monitors._scrapers_market import (
    MarketplaceSettings,
    ScrapersMarketplace,
    StoreProfileMemory,
    open_marketplace,
)
from .monitors._supervisor import RestartPolicy
from .runs._analyser import analyse_export, analyse_import
from .runs._manager import RunManager, RunNotCancellable, RunStillRunning
from .runs._task import Analyser, Evidence

__all__ = [
    "ActorStatus",
    "Analyser",
    "CatalogueUrlRefused",
    "ClusterSettings",
    "ConfirmPolicy",
    "Engine",
    "EngineBusy",
    "EngineSettings",
    "Evidence",
    "Feed",
    "GetStatus",
    "InvalidExport",
    "LeaseKeeper",
    "Marketplace",
    "MarketplaceSettings",
    "MonitorPolicy",
    "Pause",
    "PollNow",
    "RestartPolicy",
    "Resume",
    "RunManager",
    "RunNotCancellable",
    "RunStillRunning",
    "ScrapersMarketplace",
    "Stop",
    "StoreProfileMemory",
    "SuspectedBlock",
    "analyse_export",
    "analyse_import",
    "open_marketplace",
    "render_svg",
]
