"""Monitors: one supervised actor per monitor (`MonitorActor`), held by the node's
`MonitorRegistry`, polling through the node's shared feeds (`SharedMarketplace`) on the grid
of its search (`next_tick`), each poll's listing steps decided by `decide_poll`."""

from ._actor import MonitorActor, MonitorPolicy, MonitorStopped
from ._commands import ActorStatus, Envelope, Reply
from ._handle import EngineBusy, MonitorHandle
from ._listing_states import decide_poll
from ._poll import ConfirmPolicy
from ._registry import ActorKit, MonitorRegistry
from ._schedule import next_tick
from ._shared_feeds import SharedFeedReport, SharedMarketplace, SharingReport, SharingSettings
from ._status_board import ActorStatusBoard

__all__ = [
    "ActorKit",
    "ActorStatus",
    "ActorStatusBoard",
    "ConfirmPolicy",
    "EngineBusy",
    "Envelope",
    "MonitorActor",
    "MonitorHandle",
    "MonitorPolicy",
    "MonitorRegistry",
    "MonitorStopped",
    "Reply",
    "SharedFeedReport",
    "SharedMarketplace",
    "SharingReport",
    "SharingSettings",
    "decide_poll",
    "next_tick",
]
