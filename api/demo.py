"""`nichescope serve --demo`: the marketplace simulator beside the service, allowlisted, and a
demo account, so a newcomer sees monitors fill without internet or set-up."""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
from pathlib import Path

import trio

from scrapers.simulator import SimulatorConfig, serve_simulator
from store import AlreadyExists, Store

from .billing.grants import grant_trial
from .security import hash_password, new_id
from .settings import Settings

log = logging.getLogger("nichescope.demo")

DEMO_EMAIL = "demo@example.com"  # a special-use TLD like .local fails e-mail validation
DEMO_MIN_POLL_SECONDS = 5


async def start_simulator(nursery: trio.Nursery, port: int) -> str:
    """Serve the simulator on 127.0.0.1:`port` (0 picks one); returns its origin once ready."""
    origin: str = await nursery.start(serve_simulator, SimulatorConfig(), "127.0.0.1", port)
    return origin


def demo_settings(settings: Settings, origin: str) -> Settings:
    """Allowlist the simulator and let demo monitors (trial plan included) poll every few
    seconds: the simulator's time runs fast, a newcomer should not wait minutes."""
    trial = {**settings.plan_quotas.get("trial", {}), "min_poll_seconds": DEMO_MIN_POLL_SECONDS}
    return dataclasses.replace(
        settings,
        market_origins=(*settings.market_origins, origin),
        min_poll_seconds=min(settings.min_poll_seconds, DEMO_MIN_POLL_SECONDS),
        default_poll_seconds=min(settings.default_poll_seconds, 30),
        plan_quotas={**settings.plan_quotas, "trial": trial},
    )


def _credentials_file(settings: Settings) -> Path:
    return settings.outbox_dir.parent / "demo_credentials.txt"


async def ensure_demo_account(store: Store, settings: Settings) -> tuple[str, str | None]:
    """Create the demo account, with a trial, on first start; returns (e-mail, password or
    None if the account existed before and its password file is gone)."""
    path = _credentials_file(settings)
    password = secrets.token_urlsafe(12)
    try:
        await store.create_user(
            user_id=new_id("usr"),
            workspace_id=new_id("ws"),
            email=DEMO_EMAIL,
            name="Demo",
            password_hash=await hash_password(password),
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


def announce(url: str, origin: str, email: str, password: str | None) -> None:
    lines = [
        "",
        "  Nichescope demo",
        f"  open        {url}",
        f"  sign in as  {email}",
        f"  password    {password}"
        if password
        else "  password    (set earlier; reset it via /forgot-password)",
        f"  simulator   {origin} (try a monitor on {origin}/catalog)",
        "",
    ]
    print("\n".join(lines), flush=True)
