"""Engine: supervised actors (monitors, runs) and niche analysis."""

from ._engine import Engine, EngineSettings
from .analysis import InvalidExport, render_svg
from .cluster import ClusterSettings, LeaseKeeper
from .monitors._actor import MonitorPolicy
from .monitors._commands import ActorStatus, Pause, PollNow, Resume, Stop
from .monitors._handle import EngineBusy
from .monitors._listing_states import decide_poll
from .monitors._market import (
    CatalogueUrlRefused,
    Feed,
    Marketplace,
    OriginReport,
    SuspectedBlock,
)
from .monitors._poll import ConfirmPolicy
from .monitors._schedule import next_tick as next_poll_tick
from .monitors._scrapers_market import (
    MarketplaceSettings,
    ScrapersMarketplace,
    StoreProfileMemory,
    open_marketplace,
)
from .monitors._session_vault import StoreSessionVault
from .monitors._supervisor import RestartPolicy
from .notifications import (
    BadSecretBox,
    DestinationRefused,
    DispatchSettings,
    NotificationDispatcher,
    SecretBox,
    SendResult,
    check_destination,
    courier,
    decide_error_alerts,
    decide_niche_alerts,
    deliver,
    niche_findings,
    open_outbound,
    ping_notification,
    rotate_signing_secret,
)
from .runs._analyser import analyse_export, analyse_import
from .runs._manager import RunManager, RunNotCancellable, RunStillRunning
from .runs._task import Analyser, Evidence

__all__ = [
    "ActorStatus",
    "Analyser",
    "BadSecretBox",
    "CatalogueUrlRefused",
    "ClusterSettings",
    "ConfirmPolicy",
    "DestinationRefused",
    "DispatchSettings",
    "Engine",
    "EngineBusy",
    "EngineSettings",
    "Evidence",
    "Feed",
    "InvalidExport",
    "LeaseKeeper",
    "Marketplace",
    "MarketplaceSettings",
    "MonitorPolicy",
    "NotificationDispatcher",
    "OriginReport",
    "Pause",
    "PollNow",
    "RestartPolicy",
    "Resume",
    "RunManager",
    "RunNotCancellable",
    "RunStillRunning",
    "ScrapersMarketplace",
    "SecretBox",
    "SendResult",
    "Stop",
    "StoreProfileMemory",
    "StoreSessionVault",
    "SuspectedBlock",
    "analyse_export",
    "analyse_import",
    "check_destination",
    "courier",
    "decide_error_alerts",
    "decide_niche_alerts",
    "decide_poll",
    "deliver",
    "next_poll_tick",
    "niche_findings",
    "open_marketplace",
    "open_outbound",
    "ping_notification",
    "render_svg",
    "rotate_signing_secret",
]
