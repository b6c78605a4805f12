"""Notifications end to end, over real sockets: exactly the alerts the rules select, each once,
across a `kill -9` of the service mid-poll and a receiver that fails, then recovers.

`nichescope serve` runs as a child process on PostgreSQL (as in tests/hardening/
test_kill_and_faults.py, whose helpers it uses), against the marketplace simulator in this
process, where new listings keep appearing and the test lowers or raises prices. Four local
receivers stand for the destinations: a Standard Webhooks endpoint verifying every signature
with the independent `standardwebhooks` package, the Telegram Bot API fake, the Discord webhook
fake (tests/notify_fakes.py) and a real SMTP server (aiosmtpd). Everything is configured
through the REST API with a token: one channel per receiver, and one workspace default rule
per channel with different filters (webhook: every new listing and every price drop;
Telegram: new listings of two brands; Discord: new listings and drops in a price range;
e-mail: new listings with some words in the title and not others).

The run: bootstrap; alerts flow; prices drop (and one rises); SIGKILL while a poll is half
done, at a moment nothing is being sent, and start again on the same database; the webhook
receiver answers 500 for a while (the channel must show `failing` and the delivery log the
attempts, the error in words), then recovers; the marketplace freezes, the monitor is
paused, the service is killed again and started once more to send what is left.

Oracle: the database's record of what the monitor saw (polls, listing events), filtered by
the rules re-implemented in tests/e2e/notify_oracle.py, against what each receiver accepted:
the same (rule, listing, kind) set, and nothing twice (the webhook counts distinct
`webhook-id`s, and no two ids may carry the same alert). Both kills happen while nothing is
being sent (checked in the database), so at-least-once delivery owes no duplicate anywhere.

Why PostgreSQL: the outbox is claimed with `FOR UPDATE SKIP LOCKED` there, and the kill test
it extends runs there; SQLite serialises its writers, so a claim there cannot be contended,
and the store's tests cover its dialect of the same statements.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import os
import re
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio_asyncio
from aiosmtpd.controller import Controller
from standardwebhooks.webhooks import Webhook

from api.settings import Settings
from bench._common import free_port
from engine.notifications._signing import webhook_headers
from scrapers.simulator import (
    FeedFilter,
    SimulatorApp,
    SimulatorConfig,
    World,
    create_simulator_app,
    serve_app,
)
from store import Store, open_store
from tests.api.helpers import bearer, create_token, signed_in
from tests.conftest import RunningService, ServiceClient
from tests.e2e.accuracy import _is_market
from tests.e2e.notify_oracle import Seen, Want, duplicates, load_seen, selected
from tests.e2e.notify_receivers import (
    SmtpInbox,
    WebhookReceiver,
    discord_alerts,
    email_alerts,
    telegram_alerts,
)
from tests.hardening.test_kill_and_faults import ServiceProcess, Watch, _read, watched_client
from tests.notify_fakes import FakeDiscord, FakeTelegram

SPEED = 600.0  # ten simulated minutes a real second
ARRIVALS_PER_DAY = 216.0  # 1.5 new listings a real second
BOT_TOKEN = "123456789:" + "A" * 35
CHAT_ID = "424242"
ALERTS_TO = "alerts@example.com"
ENOUGH = 60.0  # seconds: the deadline of every wait on a condition
QUIET_MARGIN = timedelta(seconds=2)  # nothing due this soon, or the outbox is not quiet


@pytest.fixture
def smtp() -> Iterator[tuple[SmtpInbox, int]]:
    inbox = SmtpInbox()
    port = free_port()
    # A plain asyncio loop of its own, on the controller's thread (as tests/billing does).
    loop = asyncio.SelectorEventLoop()
    controller = Controller(inbox, hostname="127.0.0.1", port=port, loop=loop)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()
        loop.close()


def _rules(world: World) -> dict[str, Want]:
    """One rule per channel kind, its filters chosen from the listings the simulator will
    bring in the run's first simulated hours, so that each selects some and leaves some."""
    start = world.config.start
    coming = [item for item in world.listings if start < item.born < start + 8 * 3600]
    brands = [world.brands[b] for b, _ in Counter(i.brand_id for i in coming).most_common(2)]
    prices = sorted(i.price for i in coming)
    low, high = prices[len(prices) // 3], prices[2 * len(prices) // 3]
    return {
        "webhook": Want("Everything new", ("new_listing", "price_drop")),
        "telegram": Want("Two brands", ("new_listing",), brands=tuple(brands)),
        "discord": Want("Mid-priced", ("new_listing", "price_drop"), price_min=low, price_max=high),
        "email": Want(
            "Jeans and coats",
            ("new_listing",),
            include=("jeans", "coats"),
            exclude=(brands[0].lower(),),
        ),
    }


def _reprice(world: World, item_id: int, factor: Decimal) -> None:
    """The seller changes the price (the simulator's listings keep theirs, so the test does)."""
    old = world.by_id[item_id]
    new = dataclasses.replace(old, price=(old.price * factor).quantize(Decimal("0.5")))
    world.by_id[item_id] = new
    world.listings[world.listings.index(old)] = new


async def _start_trial(client: httpx.AsyncClient, inbox: SmtpInbox, email: str) -> None:
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


async def _post(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post(path, json=body)
    assert response.status_code in (201, 202), response.text
    return response.json()  # type: ignore[no-any-return]


async def _outbox_quiet(store: Store, workspace_id: str) -> tuple[bool, str]:
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


async def _hold_a_poll(run: Run) -> list[dict[str, Any]]:
    """Freeze the marketplace (it holds its answers) until a request of a poll is waiting:
    that poll is half done and cannot commit. The requests held (the simulator's log)."""
    run.app.frozen = True
    with trio.fail_after(ENOUGH):
        while True:
            held = [e for e in run.app.log[-50:] if e["status"] is None and _is_market(e)]
            if held:
                return held
            await trio.sleep(0.02)


async def _kill_when_quiet(run: Run, store: Store, held: list[dict[str, Any]]) -> None:
    """SIGKILL the service once its outbox is quiet (nothing being sent nor due) while the
    poll `_hold_a_poll` holds is still half done, then thaw the marketplace.

    Why hold the poll: its requests last milliseconds and a look at the outbox longer, and
    a held poll adds no alert while the dispatcher drains what is due (e-mail is paced 5 s).
    """
    state = ""
    try:
        with trio.move_on_after(ENOUGH):
            while True:
                quiet, state = await _outbox_quiet(store, run.workspace_id)
                assert any(e["status"] is None for e in held), "the held poll went on"
                if quiet:
                    await run.service.kill()
                    return
                await trio.sleep(0.05)
        raise AssertionError(f"the outbox was not quiet within {ENOUGH} s: {state}")
    finally:
        run.app.frozen = False


async def _wait(
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
    arrivals: str = ""  # what `_arrived` saw last

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
            "email": [a for m in self.inbox.to(ALERTS_TO) for a in email_alerts(m)],
        }


async def test_alerts_reach_every_channel_exactly_once_across_kill_9_and_an_outage(
    postgres_url: str, tmp_path: Path, nursery: trio.Nursery, smtp: tuple[SmtpInbox, int]
) -> None:
    run = await _set_up(postgres_url, tmp_path, nursery, smtp)
    wants = _rules(run.world)
    try:
        async with trio_asyncio.open_loop(), open_store(postgres_url) as store:
            await run.service.start()
            await _configure(run, store, wants)
            await _first_life(run, store)
            await run.service.start()
            await _second_life(run, store)
            await run.service.start()
            async with run.client() as client:
                await _wait("no alert pending", lambda: _none_pending(client))
                with trio.move_on_after(ENOUGH) as late:
                    while not await _arrived(run, store):
                        await trio.sleep(0.1)
                assert not late.cancelled_caught, f"not every alert arrived: {run.arrivals}"
                failed = await client.get(
                    "/api/notifications/notifications", params={"status": "failed"}
                )
                hook_deliveries = await _deliveries(client, run.channels["webhook"])
            await run.service.kill()
            recorded = await load_seen(store, run.monitor_id)
            outbox, _ = await store.notify.notifications(run.workspace_id, limit=5000)
    finally:
        await run.service.close()

    assert not run.server_errors, run.server_errors
    assert "Traceback" not in _read(run.service.log_path), run.service.log_tail()
    assert failed.json()["total"] == 0, failed.text
    _assert_exactly_once(run, recorded, wants)
    assert all(n.status == "delivered" for n in outbox), Counter(n.status for n in outbox)

    # The outage as the delivery log told it: failed attempts with the error in words, then
    # successes again (and every alert that waited got there, checked above).
    failures = [d for d in hook_deliveries if not d["ok"] and not d["test"]]
    assert len(failures) >= 3 and run.hook.failures >= 3, (failures, run.hook.failures)
    assert all(d["status_code"] == 500 for d in failures), failures
    assert all("answered 500 Internal Server Error" in str(d["error"]) for d in failures)
    last_failure = max(d["attempted_at"] for d in failures)
    assert any(d["ok"] and d["attempted_at"] > last_failure for d in hook_deliveries)

    await _forged_and_replayed_are_refused(run.hook)


async def _set_up(
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
        settings=dataclasses.replace(
            Settings(), database_url=postgres_url, smtp_url=env["NICHESCOPE_SMTP_URL"]
        ),
    )
    return Run(world, app, origin, hook, telegram, discord, inbox, service, running)


async def _configure(run: Run, store: Store, wants: dict[str, Want]) -> None:
    """Sign up (the trial through its mailed link), make a token, then with the token: the
    four channels, a rule for each, and the monitor, polled until it has bootstrapped."""
    async with watched_client(run.running, run.server_errors) as browser:
        email = await signed_in(browser, trial=False)
        await _start_trial(browser, run.inbox, email)
        run.token = await create_token(browser, ["read", "write"])
    given = {
        "webhook": {"url": run.hook.url},
        "telegram": {"bot_token": BOT_TOKEN, "chat_id": CHAT_ID},
        "discord": {"url": run.discord.webhook_url},
        "email": {"email": ALERTS_TO},
    }
    async with run.client() as client:
        for kind, fields in given.items():
            body = {"kind": kind, "name": f"{kind} alerts", **fields}
            created = await _post(client, "/api/notifications/channels", body)
            run.channels[kind] = str(created["id"])
            if kind == "webhook":
                assert str(created["signing_secret"]).startswith("whsec_"), created
                run.hook.secret = str(created["signing_secret"])
            rule = wants[kind].body(run.channels[kind])
            run.rules[kind] = str((await _post(client, "/api/notifications/rules", rule))["id"])
        url = f"{run.origin}/catalog?order=newest_first"
        started = await _post(client, "/api/monitoring/start", {"url": url, "interval_seconds": 1})
        run.monitor_id = str(started["id"])
        await Watch([run.monitor_id]).polls_reach(client, {run.monitor_id: 3}, ENOUGH)
    monitor = await store.monitors.get(run.monitor_id, None)
    assert monitor is not None
    run.workspace_id = monitor.workspace_id


async def _first_life(run: Run, store: Store) -> None:
    """Alerts flow; prices move (four drops and a rise, on listings the monitor knows); then
    SIGKILL mid-poll while nothing is being sent."""
    watch = Watch([run.monitor_id])
    await _wait("three webhook alerts", lambda: len(run.hook.accepted) >= 3)
    known = {r.item_id async for r in store.monitors.iter_listings(run.monitor_id)}
    live = [i.id for i in run.world.live(run.app.sim_now(), FeedFilter())[:40] if i.id in known]
    assert len(live) >= 5, live
    for item_id in live[:4]:
        _reprice(run.world, item_id, Decimal("0.75"))
    _reprice(run.world, live[4], Decimal("1.2"))
    await _wait("a price drop alert", lambda: "price_drop" in _kinds(run.hook))
    async with run.client() as client:
        run.polls_before_kill = (await watch.polls(client))[run.monitor_id]
    await _kill_when_quiet(run, store, await _hold_a_poll(run))


async def _second_life(run: Run, store: Store) -> None:
    """Polls resume; a listing first seen after the restart drops too (both kinds for it);
    the webhook receiver fails (500) until the channel shows `failing` with three attempts
    logged, then recovers; then the market freezes mid-poll, the monitor is paused and the
    service is killed, quietly."""
    before = run.polls_before_kill
    hook_channel = run.channels["webhook"]
    async with run.client() as client:
        await Watch([run.monitor_id]).polls_reach(client, {run.monitor_id: before + 2}, ENOUGH)
        fresh = await _first_seen_after(store, run.monitor_id, before)
        if fresh is not None:
            _reprice(run.world, fresh, Decimal("0.8"))

        run.hook.failing = True
        await _wait(
            "the webhook channel failing, three failed attempts logged",
            lambda: _failing(client, hook_channel, 3),
        )
        health = await _channel(client, hook_channel)
        assert health["health"] == "failing" and health["failing_since"], health
        assert "500 Internal Server Error" in str(health["last_error"]), health
        run.hook.failing = False
        await _wait(
            "the webhook channel healthy again",
            lambda: _health_is(client, hook_channel, "healthy"),
        )

        # The end of polling: a poll held half done, the monitor paused, the service
        # killed; the last life only sends what is left.
        held = await _hold_a_poll(run)
        paused = await client.post(f"/api/monitoring/{run.monitor_id}/pause")
        assert paused.status_code == 200, paused.text
        await _kill_when_quiet(run, store, held)


def _kinds(hook: WebhookReceiver) -> set[str]:
    return {kind for _, (_, kind) in hook.alerts()}


async def _first_seen_after(store: Store, monitor_id: str, polls: int) -> int | None:
    """A listing whose first sight came in a poll after the first `polls` successful ones."""
    ok = [p async for p in store.monitors.iter_polls(monitor_id) if p.error is None]
    later = {p.id for p in ok[polls:]}
    news = [e.item_id async for e in store.monitors.iter_events(monitor_id)
            if e.kind == "new" and e.poll_id in later]  # fmt: skip
    return news[-1] if news else None


async def _channel(client: httpx.AsyncClient, channel_id: str) -> dict[str, Any]:
    response = await client.get(f"/api/notifications/channels/{channel_id}")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def _health_is(client: httpx.AsyncClient, channel_id: str, health: str) -> bool:
    return (await _channel(client, channel_id))["health"] == health


async def _deliveries(client: httpx.AsyncClient, channel_id: str) -> list[dict[str, Any]]:
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


async def _failing(client: httpx.AsyncClient, channel_id: str, attempts: int) -> bool:
    if not await _health_is(client, channel_id, "failing"):
        return False
    failed = [d for d in await _deliveries(client, channel_id) if not d["ok"]]
    return len(failed) >= attempts


async def _none_pending(client: httpx.AsyncClient) -> bool:
    response = await client.get("/api/notifications/notifications", params={"status": "pending"})
    assert response.status_code == 200, response.text
    return response.json()["total"] == 0  # type: ignore[no-any-return]


async def _arrived(run: Run, store: Store) -> bool:
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


def _assert_exactly_once(run: Run, recorded: Seen, wants: dict[str, Want]) -> None:
    """Each receiver accepted exactly what its rule selects, each alert once."""
    received = run.received()
    assert {rule for rule, _ in run.hook.alerts()} == {run.rules["webhook"]}
    assert not run.hook.repeats, run.hook.repeats  # no kill fell between a send and its record
    for kind, want in wants.items():
        expected = selected(want, recorded)
        assert expected, f"{kind}: the rule selected nothing; the run proves nothing"
        got = received[kind]
        assert not duplicates(got), f"{kind}: arrived twice: {duplicates(got)}"
        missing, extra = expected - set(got), set(got) - expected
        assert not missing and not extra, f"{kind}: missing {missing}, not selected {extra}"
        assert len(got) == len(expected)
    # The run met what it is about: drops, and a rise that alerted nobody.
    drops = recorded.price_drops()
    assert len(drops) >= 3, drops
    rises = recorded.rises() - set(drops)
    assert rises, "no price rose"
    assert not {(i, "price_drop") for i in rises} & set(received["webhook"])


async def _forged_and_replayed_are_refused(hook: WebhookReceiver) -> None:
    """Requests the receiver must refuse (4xx) and never count: a body signed with another
    secret; a genuine request with its body changed; a genuine request replayed with a fresh
    timestamp (the signature covers it); and one that Nichescope signed ten minutes ago,
    replayed now (outside the receiver's tolerance). A verbatim repeat of a genuine request
    is recognised by its id and not counted again."""
    assert hook.secret is not None and hook.genuine
    genuine = hook.genuine[-1]
    counted = dict(hook.accepted)
    msg_id = genuine.headers["webhook-id"]
    other = "whsec_" + "QUJD" * 8
    fresh_id = f"ntf_forged_{secrets.token_hex(6)}"
    forged = {"content-type": "application/json", **webhook_headers(other, fresh_id, genuine.body)}
    tampered_body = genuine.body.replace(b'"version":1', b'"version":2', 1)
    assert tampered_body != genuine.body
    refreshed = {**genuine.headers, "webhook-timestamp": str(int(datetime.now(UTC).timestamp()))}
    stale_time = int(datetime.now(UTC).timestamp()) - 600
    stale_id = f"ntf_stale_{secrets.token_hex(6)}"
    stale = webhook_headers(hook.secret, stale_id, genuine.body, timestamp=stale_time)
    # The stale one is genuinely signed: the same with a current time verifies.
    Webhook(hook.secret).verify(genuine.body, webhook_headers(hook.secret, stale_id, genuine.body))
    attempts = [
        ("a body signed with another secret", forged, genuine.body),
        ("a genuine request with its body changed", genuine.headers, tampered_body),
        ("a replay with a fresh timestamp", _later(refreshed, genuine.headers), genuine.body),
        ("a replay signed ten minutes ago", stale, genuine.body),
    ]
    async with httpx.AsyncClient(timeout=10) as http:
        for what, headers, body in attempts:
            response = await http.post(hook.url, content=body, headers=headers)
            assert 400 <= response.status_code < 500, (what, response.status_code)
        repeat = await http.post(hook.url, content=genuine.body, headers=genuine.headers)
    assert repeat.status_code == 204
    assert hook.accepted == counted
    assert hook.repeats == [msg_id]
    assert len(hook.refused) == len(attempts), hook.refused


def _later(refreshed: dict[str, str], original: dict[str, str]) -> dict[str, str]:
    """`refreshed`, its timestamp made different from the original's for sure."""
    if refreshed["webhook-timestamp"] == original["webhook-timestamp"]:
        refreshed = {**refreshed, "webhook-timestamp": str(int(original["webhook-timestamp"]) + 1)}
    return refreshed
