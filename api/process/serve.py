"""`nichescope serve`: one nursery at the top composes everything.

In order: the Store (an embedded SQLite migrates itself), the Engine (which owns every
actor), then Hypercorn's Trio server. SIGINT/SIGTERM stop intake; Hypercorn lets in-flight
requests finish within its graceful timeout; leaving the Engine's block stops the actors and,
in cluster mode, gives their leases back.
"""

from __future__ import annotations

import logging
import signal
from contextlib import AsyncExitStack
from dataclasses import dataclass

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve

from api.app import create_app
from api.process import demo
from api.process.node import open_node
from api.services import app_services
from api.settings import Settings
from engine import Marketplace

log = logging.getLogger("nichescope")


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8000
    graceful_seconds: float = 10.0
    demo: bool = False
    demo_simulator_port: int = 8100


def served_url(host: str, port: int) -> str:
    """The address a browser on this machine opens for `--host`/`--port` (a wildcard host is
    reached through the loopback address)."""
    if host in ("0.0.0.0", "", "::"):
        host = "127.0.0.1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def hypercorn_config(options: ServeOptions) -> HypercornConfig:
    config = HypercornConfig()
    config.bind = [f"{options.host}:{options.port}"]
    config.graceful_timeout = options.graceful_seconds
    config.accesslog = None
    # Slow or idle clients must not hold connections forever (slowloris): Hypercorn counts a
    # connection idle until a request's headers are complete, so headers trickled in byte by
    # byte are cut after `keep_alive_timeout`; a body that trickles is cut by Quart's
    # BODY_TIMEOUT. No `read_timeout`: it fires whenever the client sends nothing for that
    # long, which is every long download (a large export streams for minutes).
    config.keep_alive_timeout = 15
    config.h11_max_incomplete_size = 64 * 1024
    return config


async def wait_for_stop_signal() -> None:
    """Return at the first SIGINT or SIGTERM."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("received %s: shutting down", signal.Signals(signum).name)
            return


async def serve(
    settings: Settings,
    options: ServeOptions,
    *,
    market: Marketplace | None = None,
    shutdown_trigger: trio.Event | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the service until a stop signal (or `shutdown_trigger`, for tests) arrives.

    `market` replaces the real marketplace client (tests); `task_status.started(binds)` is
    called once Hypercorn listens, with the bound addresses.
    """
    trigger = shutdown_trigger.wait if shutdown_trigger is not None else wait_for_stop_signal
    async with AsyncExitStack() as stack:
        helpers = await stack.enter_async_context(trio.open_nursery())
        stack.callback(helpers.cancel_scope.cancel)  # runs first on exit: helpers end with us
        demo_market = None
        if options.demo:
            demo_market = await demo.start_market(
                helpers, options.demo_simulator_port, demo.demo_var(settings)
            )
            settings = demo.demo_settings(settings, demo_market.origins)
        store, engine = await stack.enter_async_context(
            open_node(settings, role="serve", market=market)
        )
        app = create_app(store=store, engine=engine, settings=settings)
        if engine.clustered:  # cluster mode: sessions and tokens may end on any node
            sessions = app_services(app).sessions
            helpers.start_soon(store.listen_for_session_ends, sessions.session_ended)
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(
                lambda task_status: hypercorn_serve(
                    app,
                    hypercorn_config(options),
                    shutdown_trigger=trigger,
                    task_status=task_status,
                )
            )
            log.info("serving on %s", ", ".join(binds))
            if demo_market is not None:
                email, password = await demo.ensure_demo_account(store, settings)
                demo.announce(settings.public_url, demo_market, email, password)
                helpers.start_soon(demo.fill_demo_account, store, engine, settings, demo_market)
            task_status.started(binds)
