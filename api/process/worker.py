"""`nichescope worker`: a node without HTTP: the Store, the marketplace client and the Engine.

It runs the same actors as `nichescope serve` (monitors, runs, notification dispatch) and
leaves the HTTP side to other nodes; a stop signal (or the trigger, in tests) ends it, and
leaving the node's block stops the actors and gives their leases back.
"""

from __future__ import annotations

import logging

import trio

from api.process.node import open_node
from api.process.serve import wait_for_stop_signal
from api.settings import Settings

log = logging.getLogger("nichescope")


async def work(settings: Settings, *, shutdown_trigger: trio.Event | None = None) -> None:
    """`nichescope worker`: the engine without HTTP, until a stop signal (or the trigger)."""
    async with open_node(settings, role="worker"):
        log.info("worker %s running", settings.node_id)
        if shutdown_trigger is not None:
            await shutdown_trigger.wait()
        else:
            await wait_for_stop_signal()
