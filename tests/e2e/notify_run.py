"""The machinery of the notification end-to-end run (tests/e2e/test_notifications_e2e.py):
the simulator, the receivers and `nichescope serve` in a child process, set up together;
the kill "mid-poll while nothing is being sent"; and the API reads the run waits on.

Every wait is on a condition with a generous deadline (`ENOUGH`), never a fixed sleep.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import re
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import trio

from api.settings import Settings
from bench._common import free_port
from scrapers.simulator import SimulatorApp, SimulatorConfig, World, create_simulator_app, serve_app
from store import Store
from tests.api.helpers import bearer
from tests.conftest import RunningService, ServiceClient
from tests.e2e.accuracy import _is_market
from tests.e2e.notify_receivers import (
    WebhookReceiver,
    discord_alerts,
    email_alerts,
    telegram_alerts,
)
from tests.hardening.test_kill_and_faults import ServiceProcess, watched_client
from tests.notify_fakes import FakeDiscord, FakeTelegram
from tests.smtp import SmtpInbox

SPEED = 600.0  # ten simulated minutes a real second
ARRIVALS_PER_DAY = 216.0  # 1.5 new listings a real second
BOT_TOKEN = "123456789:" + "A" * 35
CHAT_ID = "424242"
ALERTS_TO = "alerts@example.com"
CONFIRM_ALERTS = "Confirm Nichescope alerts to this address"
ENOUGH = 60.0  # seconds: the deadline of every wait on a condition
QUIET_MARGIN = timedelta(seconds=2)  # nothing due this soon, or the outbox is not quiet


def reprice(world: World, item_id: int, factor: Decimal) -> None:
    """The seller changes the price (the simulator's listings keep theirs, so the test does)."""
    old = world.by_id[item_id]
    new = dataclasses.replace(old, price=(old.price * factor).quantize(Decimal("0.5")))
    world.by_id[item_id] = new
    world.listings[world.listings.index(old)] = new


async def start_trial(client: httpx.AsyncClient, inbox: SmtpInbox, email: str) -> None:
    """The free trial, started through the link it mails (here, over SMTP)."""
    started = await client.post("/api/billing/trial/start", json={"email": email})
    assert started.status_code == 200, started.text
    with trio.fail_after(ENOUGH):
        while not (mails := inbox.to(email)):
            await trio.sleep(0.05)
    text = str(mails[-1].get_content())  # type: ignore[attr-defined]
    match = re.search(r"/billing/trial/confirm\?token=([A-Za-z0-9_\-]+)", text)
    assert match, mails[-1]
    confirmed = await client.get("/api/billing/trial/confirm", params={"token": match.group(1)})
    assert confirmed.status_code == 200, confirmed.text


async def confirm_recipient(client: httpx.AsyncClient, inbox: SmtpInbox, address: str) -> None:
    """The recipient of an e-mail channel agrees to its alerts, through the link mailed to
    them (nothing is sent to an address before: docs/notifications.md)."""
    with trio.fail_after(ENOUGH):
        while not (mails := [m for m in inbox.to(address) if m["Subject"] == CONFIRM_ALERTS]):
            await trio.sleep(0.05)
    text = str(mails[-1].get_content())  # type: ignore[attr-defined]
    match = re.search(r"/notifications/confirm\?token=([A-Za-z0-9_\-]+)", text)
    assert match, text
    body = {"token": match.group(1)}
    confirmed = await client.post("/api/notifications/confirm-email", json=body)
    assert confirmed.status_code == 200, confirmed.text


async def post(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post(path, json=body)
    assert response.status_code in (201, 202), response.text
    return response.json()  # type: ignore[no-any-return]


async def outbox_quiet(store: Store, workspace_id: str) -> tuple[bool, str]:
    """Whether nothing is being sent nor due within `QUIET_MARGIN`: every channel either has
    no due pending alert or is paced beyond the margin (a send in flight always has due
    alerts and a pace already past, so this excludes it); and the state, in words."""
    soon = datetime.now(UTC) + QUIET_MARGIN
    quiet, state = True, []
    for channel in await store.notify.channels(workspace_id):
        rows, _ = await store.notify.notifications(
            workspace_id, channel_id=channel.id, status="pending", limit=500
        )
        due = [
            n for n in rows
            if n.due_at <= soon and (n.next_attempt_at is None or n.next_attempt_at <= soon)
        ]  # fmt: skip
        paced = channel.next_send_at is not None and channel.next_send_at > soon
        quiet = quiet and (not due or paced)
        state.append(f"{channel.kind}: {len(rows)} pending, {len(due)} due, next send "
                     f"{channel.next_send_at}, health {channel.health}")  # fmt: skip
    return quiet, "; ".join(state)


async def hold_a_poll(run: Run) -> list[dict[str, Any]]:
    """Freeze the marketplace (it holds its answers) until a request of a poll is waiting:
    that poll is half done and cannot commit. The requests held (the simulator's log)."""
    run.app.frozen = True
    with trio.fail_after(ENOUGH):
        while True:
            held = [e for e in run.app.log[-50:] if e["status"] is None and _is_market(e)]
            if held:
                return held
            await trio.sleep(0.02)


async def kill_when_quiet(run: Run, store: Store, held: list[dict[str, Any]]) -> None:
    """SIGKILL the service once its outbox is quiet (nothing being sent nor due) while the
    poll `hold_a_poll` holds is still half done, then thaw the marketplace.

    Why hold the poll: its requests last milliseconds and a look at the outbox longer, and
    a held poll adds no alert while the dispatcher drains what is due (e-mail is paced 5 s).
    """
    state = ""
    try:
        with trio.move_on_after(ENOUGH):
            while True:
                quiet, state = await outbox_quiet(store, run.workspace_id)
                assert any(e["status"] is None for e in held), "the held poll went on"
                if quiet:
                    await run.service.kill()
                    return
                await trio.sleep(0.05)
        raise AssertionError(f"the outbox was not quiet within {ENOUGH} s: {state}")
    finally:
        run.app.frozen = False


async def wait_for(
    what: str, condition: Callable[[], bool | Awaitable[bool]], seconds: float = ENOUGH
) -> None:
    """Until `condition()` (awaited if need be) is true; an `AssertionError` naming `what`
    after `seconds`."""

    async def holds() -> bool:
        value = condition()
        return await value if inspect.isawaitable(value) else bool(value)

    with trio.move_on_after(seconds):
        while not await holds():
            await trio.sleep(0.1)
        return
    raise AssertionError(f"not within {seconds} s: {what}")


@dataclasses.dataclass
class Run:
    """Everything one run holds: the simulator, the receivers, the service and its clients."""

    world: World
    app: SimulatorApp
    origin: str
    hook: WebhookReceiver
    telegram: FakeTelegram
    discord: FakeDiscord
    inbox: SmtpInbox
    service: ServiceProcess
    running: RunningService
    server_errors: list[str] = dataclasses.field(default_factory=list)
    token: str = ""
    channels: dict[str, str] = dataclasses.field(default_factory=dict)  # by channel kind
    rules: dict[str, str] = dataclasses.field(default_factory=dict)  # by channel kind
    monitor_id: str = ""
    workspace_id: str = ""
    polls_before_kill: int = 0
    arrivals: str = ""  # what `arrived` saw last

    def client(self) -> ServiceClient:
        """A client of the service's current life, with the token (5xx answers noted)."""
        client = watched_client(self.running, self.server_errors)
        client.headers.update(bearer(self.token))
        return client

    def received(self) -> dict[str, list[tuple[int, str]]]:
        """What each receiver accepted, as (item_id, kind), by channel kind."""
        return {
            "webhook": [alert for _, alert in self.hook.alerts()],
            "telegram": [a for m in list(self.telegram.messages) for a in telegram_alerts(m)],
            "discord": [a for m in list(self.discord.messages) for a in discord_alerts(m)],
            "email": [
                a
                for m in self.inbox.to(ALERTS_TO)
                if m["Subject"] != CONFIRM_ALERTS
                for a in email_alerts(m)
            ],
        }


async def set_up(
    postgres_url: str, tmp_path: Path, nursery: trio.Nursery, smtp: tuple[SmtpInbox, int]
) -> Run:
    """The simulator and the receivers, listening; the service's command line and settings."""
    config = SimulatorConfig(seed=5, speed=SPEED, n_listings=60, arrivals_per_day=ARRIVALS_PER_DAY)
    world = World(config)
    app = create_simulator_app(world)
    origin: str = await nursery.start(serve_app, app)
    hook = WebhookReceiver()
    await nursery.start(hook.serve)
    telegram = FakeTelegram(BOT_TOKEN)
    await nursery.start(telegram.serve)
    discord = FakeDiscord()
    await nursery.start(discord.serve)
    inbox, smtp_port = smtp
    quotas = {"trial": {"active_monitors": 5, "min_poll_seconds": 1}}
    env = {
        **os.environ,
        "NICHESCOPE_SECRET_KEY": secrets.token_urlsafe(32),  # sealed secrets survive kills
        "NICHESCOPE_NODE_ID": "notify-e2e-node",
        "NICHESCOPE_MARKET_ORIGINS": origin,
        "NICHESCOPE_MARKET_RATE": "0",
        "NICHESCOPE_MIN_POLL_SECONDS": "1",
        "NICHESCOPE_COOKIE_SECURE": "0",
        "NICHESCOPE_OUTBOX_DIR": str(tmp_path / "outbox"),
        "NICHESCOPE_PLAN_QUOTAS": json.dumps(quotas),
        "NICHESCOPE_SMTP_URL": f"smtp://127.0.0.1:{smtp_port}",
        # The fakes' exact origins; Telegram's API base is allowed as configured.
        "NICHESCOPE_OUTBOUND_ALLOW": f"{hook.url.rsplit('/', 2)[0]},{discord.url}",
        "NICHESCOPE_TELEGRAM_API_BASE": telegram.url,
    }
    service = ServiceProcess(free_port(), postgres_url, env, tmp_path / "service.log")
    running = RunningService(
        url=service.url,
        settings=Settings(database_url=postgres_url, smtp_url=env["NICHESCOPE_SMTP_URL"]),
    )
    return Run(world, app, origin, hook, telegram, discord, inbox, service, running)


def kinds_of(hook: WebhookReceiver) -> set[str]:
    return {kind for _, (_, kind) in hook.alerts()}


async def first_seen_after(store: Store, monitor_id: str, polls: int) -> int | None:
    """A listing whose first sight came in a poll after the first `polls` successful ones."""
    ok = [p async for p in store.monitors.iter_polls(monitor_id) if p.error is None]
    later = {p.id for p in ok[polls:]}
    news = [e.item_id async for e in store.monitors.iter_events(monitor_id)
            if e.kind == "new" and e.poll_id in later]  # fmt: skip
    return news[-1] if news else None


async def channel(client: httpx.AsyncClient, channel_id: str) -> dict[str, Any]:
    response = await client.get(f"/api/notifications/channels/{channel_id}")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def health_is(client: httpx.AsyncClient, channel_id: str, health: str) -> bool:
    return (await channel(client, channel_id))["health"] == health


async def deliveries(client: httpx.AsyncClient, channel_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    page = 1
    while True:
        response = await client.get(
            "/api/notifications/deliveries", params={"channel_id": channel_id, "page": page}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        found += body["deliveries"]
        if page >= body["pages"]:
            return found
        page += 1


async def failing(client: httpx.AsyncClient, channel_id: str, attempts: int) -> bool:
    if not await health_is(client, channel_id, "failing"):
        return False
    failed = [d for d in await deliveries(client, channel_id) if not d["ok"]]
    return len(failed) >= attempts


async def none_pending(client: httpx.AsyncClient) -> bool:
    response = await client.get("/api/notifications/notifications", params={"status": "pending"})
    assert response.status_code == 200, response.text
    return response.json()["total"] == 0  # type: ignore[no-any-return]


async def arrived(run: Run, store: Store) -> bool:
    """Each receiver holds at least as many alerts as the database says it was delivered
    (what was counted last is kept in `run.arrivals`, for the failure message)."""
    received = run.received()
    counts = {}
    for kind, channel_id in run.channels.items():
        _, delivered = await store.notify.notifications(
            run.workspace_id, channel_id=channel_id, status="delivered", limit=1
        )
        counts[kind] = (len(received[kind]), delivered)
    run.arrivals = f"(received, delivered) by channel: {counts}"
    return all(got >= delivered for got, delivered in counts.values())
