"""`nichescope serve --demo`: the marketplace simulator beside the service, allowlisted, and a
demo account, so a newcomer sees monitors fill without internet or set-up."""

from __future__ import annotations

import logging
import os
import secrets
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlencode

import trio

from api.billing.grants import grant_trial
from api.http.security import hash_password, new_id
from api.process.demo_market import keep_state, load_state, market_file, plan_market
from api.process.demo_sample import LIVE_LABEL, record_sample
from api.settings import Settings
from engine import Engine, SecretBox, check_destination
from scrapers.simulator import CATEGORIES, SimOrigins, World, create_simulator_app, serve_app
from store import AlreadyExists, NewChannel, NewMonitor, NewRule, NewUser, RuleFilters, Store

log = logging.getLogger("nichescope.demo")

DEMO_EMAIL = "demo@example.com"  # a special-use TLD like .local fails e-mail validation
DEMO_MIN_POLL_SECONDS = 5
DEMO_LIVE_POLL_SECONDS = 10


@dataclass(frozen=True, slots=True)
class DemoMarket:
    """The simulator the demo serves: its `origins`, where its state is kept and what became
    of it on this start (`story`: new, continued or renewed)."""

    origins: SimOrigins
    state_file: Path
    story: str


def demo_var(settings: Settings) -> Path:
    """The demo's own files (credentials, the market's state): `var/` beside the outbox."""
    return settings.outbox_dir.parent


async def start_market(nursery: trio.Nursery, port: int, var: Path) -> DemoMarket:
    """Serve the demo's market on 127.0.0.1:`port` and its API on the next port (0 picks
    both), continued from its state in `var` when there is one (`demo_market`), and keep that
    state in `nursery` while it runs; returns once both origins listen. Bind errors reach the
    caller. The market's dates agree with the wall clock on first start (its history reaches
    weeks back); its clock then runs 60 times faster, which every answer states."""
    path = market_file(var)
    plan = plan_market(load_state(path), time.time())
    app = create_simulator_app(World(plan.config))
    api_port = port + 1 if port else 0
    origins: SimOrigins = await nursery.start(serve_app, app, "127.0.0.1", port, api_port)
    nursery.start_soon(keep_state, app, path, plan.state)
    return DemoMarket(origins, path, plan.story)


def live_catalogue_url(origin: str) -> str:
    """The whole simulated catalogue, one category feed each (so every listing's category
    is known), newest first."""
    query = urlencode([("catalog[]", c) for c, _ in CATEGORIES] + [("order", "newest_first")])
    return f"{origin}/catalog?{query}"


def demo_settings(settings: Settings, origins: SimOrigins) -> Settings:
    """Allowlist the simulator (site and API origins, mapped to each other) and let demo
    monitors (trial plan included) poll every few seconds: the simulator's time runs fast, a
    newcomer should not wait minutes."""
    trial = {**settings.plan_quotas.get("trial", {}), "min_poll_seconds": DEMO_MIN_POLL_SECONDS}
    return settings.model_copy(
        update={
            "market_origins": (*settings.market_origins, origins.site, origins.api),
            "market_api_origins": (*settings.market_api_origins, (origins.site, origins.api)),
            "min_poll_seconds": min(settings.min_poll_seconds, DEMO_MIN_POLL_SECONDS),
            "default_poll_seconds": min(settings.default_poll_seconds, 30),
            "plan_quotas": {**settings.plan_quotas, "trial": trial},
        }
    )


def _credentials_file(settings: Settings) -> Path:
    return demo_var(settings) / "demo_credentials.txt"


async def ensure_demo_account(store: Store, settings: Settings) -> tuple[str, str | None]:
    """Create the demo account, with a trial, on first start; returns (e-mail, password or
    None if the account existed before and its password file is gone)."""
    path = _credentials_file(settings)
    password = secrets.token_urlsafe(12)
    try:
        await store.create_user(
            NewUser(
                email=DEMO_EMAIL,
                name="Demo",
                password_hash=await hash_password(password),
                # Its mail is the local outbox folder, which the person running the demo reads.
                email_verified_at=store.clock(),
            )
        )
    except AlreadyExists:
        try:
            return DEMO_EMAIL, path.read_text().strip() or None
        except FileNotFoundError:
            return DEMO_EMAIL, None
    user = await store.get_credentials(DEMO_EMAIL)
    if user is not None:
        await grant_trial(store, settings, user.user.workspace_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(password + "\n")
    return DEMO_EMAIL, password


def announce(url: str, market: DemoMarket, email: str, password: str | None) -> None:
    site, api = market.origins.site, market.origins.api
    lines = [
        "",
        "  Nichescope demo",
        f"  open        {url}",
        f"  sign in as  {email}",
        f"  password    {password}"
        if password
        else "  password    (set earlier; reset it via /forgot-password)",
        f"  simulator   {site} (its API on {api}; try a monitor on {site}/catalog)",
        f"  market      {market.story} (kept in {market.state_file})",
        "",
    ]
    print("\n".join(lines), flush=True)


async def fill_demo_account(
    store: Store, engine: Engine, settings: Settings, market: DemoMarket
) -> None:
    """On the demo account's first start: a live monitor of the simulator (its whole
    catalogue) and the sample month beside it (`demo_sample`). An account that already has
    monitors is left as it is. A failure is logged and the demo goes on without the sample:
    it is a helper task of the serving process, never a reason to stop serving."""
    try:
        user = await store.get_credentials(DEMO_EMAIL)
        if user is None or await store.monitors.in_workspace(user.user.workspace_id):
            return
        workspace_id = user.user.workspace_id
        origin = market.origins.site

        async def start_live_monitor() -> None:
            live = NewMonitor(
                monitor_id=new_id("mon"),
                workspace_id=workspace_id,
                url=live_catalogue_url(origin),
                label=LIVE_LABEL,
                interval_seconds=DEMO_LIVE_POLL_SECONDS,
                page_cap=settings.page_cap,
            )
            await engine.start_monitor(live)

        # The sample holds a trial slot only during its first poll, the live monitor one from
        # then on: a newcomer always has a slot left for a monitor of their own.
        sample = await record_sample(store, engine, workspace_id, origin, then=start_live_monitor)
        log.info(
            "demo: sample month recorded (%d polls, %d listings), analysis run %s",
            sample.polls, sample.listings, sample.run_id,
        )  # fmt: skip
        await add_demo_alerts(store, settings, workspace_id)
    except Exception:
        log.exception("demo: the sample data could not be recorded; the demo goes on without")


async def add_demo_alerts(store: Store, settings: Settings, workspace_id: str) -> None:
    """An e-mail channel to the demo address (the outbox folder, in development) and two
    workspace rules: new listings under €30 (which the live monitor finds within a minute,
    so a newcomer sees pushes arrive on the Alerts page), and deals, price drops, newly hot
    niches and monitors in error (deals and drops are judged by the price book that the
    sample's sales filled: one market, `demo_market.DEMO_NICHE_SEED`, whose sellers cut
    prices, so the first of each comes within minutes too).
    Added after the sample month was recorded: its history is not news, and its sales are
    all in the book by then."""
    found = await check_destination("email", {"to": DEMO_EMAIL})
    channel = await store.notify.add_channel(
        NewChannel(
            workspace_id=workspace_id,
            kind="email",
            name="My inbox",
            hint=found.hint,
            secret_box=SecretBox(settings.secret_key).seal(found.secrets),
        )
    )
    await store.notify.add_rule(
        workspace_id,
        NewRule(
            name="Bargains under €30",
            kinds=("new_listing",),
            filters=RuleFilters(price_max=Decimal(30)),
            channel_ids=(channel.id,),
        ),
    )
    await store.notify.add_rule(
        workspace_id,
        NewRule(
            name="Deals, price drops and hot niches",
            kinds=("deal", "price_drop", "new_hot_niche", "sell_through_jump", "monitor_error"),
            channel_ids=(channel.id,),
        ),
    )
