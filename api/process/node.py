"""What every node runs, with or without HTTP: the store, the marketplace client, the engine.

On PostgreSQL the engine runs in cluster mode (leases; any number of nodes may share the
database). SQLite is single-node: a lock file beside the database file makes a second node
on the same file fail at start with a clear message, instead of two engines polling the same
monitors.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from datetime import timedelta
from pathlib import Path

import httpx
import trio
from sqlalchemy.engine import make_url

from api.mail import mailer
from api.ops.system import package_version
from api.process.session_watch import watch_sessions
from api.settings import Settings
from engine import (
    ClusterSettings,
    ConfirmPolicy,
    DispatchSettings,
    Engine,
    EngineSettings,
    Marketplace,
    MarketplaceSettings,
    MonitorPolicy,
    NotificationDispatcher,
    SecretBox,
    StoreProfileMemory,
    StoreSessionVault,
    courier,
    open_engine,
    open_marketplace,
    open_outbound,
)
from store import NodeInfo, Store, open_store


class SecondNodeOnSqlite(Exception):
    def __init__(self, path: Path) -> None:
        super().__init__(
            f"another nichescope node already runs on the SQLite database {path}; SQLite mode "
            "is single-node: point every node at one PostgreSQL database to run a cluster"
        )


def migrates_itself(database_url: str) -> bool:
    """Only the embedded SQLite migrates at start-up; shared databases use `nichescope migrate`."""
    return make_url(database_url).get_backend_name() == "sqlite"


def engine_settings(settings: Settings, *, role: str, clustered: bool) -> EngineSettings:
    cluster = None
    if clustered:
        cluster = ClusterSettings(
            node=NodeInfo(
                node_id=settings.node_id,
                host=os.uname().nodename,
                pid=os.getpid(),
                version=package_version(),
                role=role,
            ),
            lease_seconds=settings.lease_seconds,
        )
    return EngineSettings(
        monitor_policy=MonitorPolicy(
            max_consecutive_errors=settings.monitor_max_errors,
            confirm=ConfirmPolicy(
                per_poll=settings.confirm_per_poll, absence_polls=settings.absence_polls
            ),
        ),
        cluster=cluster,
    )


@contextmanager
def single_node_lock(database_url: str) -> Iterator[None]:
    """Hold an exclusive lock on `<database>.node-lock` for as long as the node runs (the OS
    drops it when the process dies, even by `kill -9`). No-op for in-memory SQLite."""
    database = make_url(database_url).database
    if not database or database == ":memory:":
        yield
        return
    path = Path(database).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.node-lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as err:
            raise SecondNodeOnSqlite(path) from err
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@asynccontextmanager
async def open_node(
    settings: Settings, *, role: str, market: Marketplace | None = None
) -> AsyncIterator[tuple[Store, Engine]]:
    """The store and a running engine (and the marketplace client, unless `market` is given,
    as tests do); everything is closed in reverse order on exit."""
    async with AsyncExitStack() as stack:
        clustered = not migrates_itself(settings.database_url)
        if not clustered:
            stack.enter_context(single_node_lock(settings.database_url))
        store = await stack.enter_async_context(
            open_store(settings.database_url, run_migrations=not clustered)
        )
        on_cluster_size = None
        watched = market is None  # the sessions of a marketplace built here, not a test's
        if market is None:
            real = await stack.enter_async_context(
                open_marketplace(
                    marketplace_settings(settings),
                    memory=StoreProfileMemory(store),
                    vault=StoreSessionVault(store, settings.secret_key),
                )
            )
            market, on_cluster_size = real, real.share_politeness
        outbound = await stack.enter_async_context(
            open_outbound(settings.outbound_allow, telegram_api_base=settings.telegram_api_base)
        )
        engine = await stack.enter_async_context(
            open_engine(
                store,
                market,
                engine_settings(settings, role=role, clustered=clustered),
                on_cluster_size=on_cluster_size,
                dispatcher=notification_dispatcher(store, outbound, settings),
            )
        )
        if watched and settings.operators:
            watch = await stack.enter_async_context(trio.open_nursery())
            stack.callback(watch.cancel_scope.cancel)  # runs first on exit: the watch ends
            watch.start_soon(watch_sessions, market, settings.operators, mailer(settings).send)
        yield store, engine


def marketplace_settings(settings: Settings) -> MarketplaceSettings:
    return MarketplaceSettings(
        extra_origins=settings.market_origins,
        rate=settings.market_rate,
        burst=settings.market_burst,
        block_cool_down=settings.market_block_seconds,
        request_timeout=settings.market_timeout_seconds,
        profile=settings.market_profile,
        api_origins=settings.market_api_origins,
        user_agent=settings.market_user_agent,
        proxy=settings.market_proxy or None,
        browser=settings.market_browser,
        browser_timeout=settings.market_browser_timeout_seconds,
    )


def notification_dispatcher(
    store: Store, outbound: httpx.AsyncClient, settings: Settings
) -> NotificationDispatcher:
    """The node's dispatcher: the couriers of every channel kind over `outbound` (the
    SSRF-guarded client) and the mailer, paced and retried as `DispatchSettings` say."""
    send_mail = mailer(settings).send
    return NotificationDispatcher(
        store,
        courier(
            store,
            SecretBox(settings.secret_key),
            outbound,
            mail=send_mail,
            telegram_api_base=settings.telegram_api_base,
            allow=settings.outbound_allow,
        ),
        DispatchSettings(
            node_id=settings.node_id,
            disable_after=timedelta(hours=settings.notify_disable_after_hours),
        ),
        mail_owner=send_mail,
    )
