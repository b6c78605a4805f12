"""Notifications end to end, over real sockets: exactly the alerts the rules select, each once,
across a `kill -9` of the service mid-poll and a receiver that fails, then recovers.

`nichescope serve` runs as a child process on PostgreSQL (as in tests/hardening/
test_kill_and_faults.py, whose helpers it uses), against the marketplace simulator in this
process, where new listings keep appearing and the test lowers or raises prices. Four local
receivers stand for the destinations: a Standard Webhooks endpoint verifying every signature
with the independent `standardwebhooks` package, the Telegram Bot API fake, the Discord webhook
fake (tests/notify_fakes.py) and a real SMTP server (aiosmtpd). Everything is configured
through the REST API with a token: one channel per receiver, and one workspace default rule
per channel (made before the monitor, so that every poll after its bootstrap is judged by
them) with different filters: webhook, every new listing and every price drop; Telegram, new
listings of two brands; Discord, new listings and drops in a price range; e-mail, new
listings with some words in the title and not another.

The run (tests/e2e/notify_run.py holds its machinery): bootstrap; alerts flow; prices drop
(and one rises); SIGKILL while a poll is half done, at a moment nothing is being sent, and
start again on the same database; the webhook receiver answers 500 for a while (the channel
must show `failing` and the delivery log the attempts, the error in words), then recovers;
a poll is held half done, the monitor paused, the service killed again and started once more
to send what is left. Then forged and replayed requests are sent to the webhook receiver: 4xx,
never counted.

Oracle: the database's record of what the monitor saw (polls, listing events), filtered by
the rules re-implemented in tests/e2e/notify_oracle.py, against what each receiver accepted:
the same (rule, listing, kind) set, and nothing twice (the webhook counts distinct
`webhook-id`s, and no two ids may carry the same alert). Both kills happen while nothing is
being sent (checked in the database), so at-least-once delivery owes no duplicate anywhere.

Why PostgreSQL for the kill: the outbox is claimed there with `FOR UPDATE SKIP LOCKED` and
outcomes recorded under row locks, the code paths a dead node's half-done work meets (on
SQLite, claimers are serialised by its single writer); the test reads the database from its
own process while the service writes, routine there; and the kill test it extends runs
there. Running both backends would double its cost.

SSRF: destinations are refused at creation over the API here (422, SQLite only: nothing is
stored); at delivery (a name that resolved to a public address when the channel was made and
to a private one when sending) in tests/notify/test_delivery_rebinding.py, where the
outbound client's resolver can be injected.
"""

from __future__ import annotations

import secrets
import shutil
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
import trio
import trio_asyncio
from standardwebhooks.webhooks import Webhook

from api.settings import Settings
from engine.notifications._signing import webhook_headers
from scrapers.simulator import FeedFilter, World
from store import Store, open_store
from tests.api.helpers import assert_envelope, bearer, create_token, signed_in
from tests.conftest import start_service
from tests.e2e.notify_oracle import Seen, Want, duplicates, load_seen, selected
from tests.e2e.notify_receivers import WebhookReceiver
from tests.e2e.notify_run import (
    ALERTS_TO,
    BOT_TOKEN,
    CHAT_ID,
    ENOUGH,
    Run,
    arrived,
    channel,
    confirm_recipient,
    deliveries,
    failing,
    first_seen_after,
    health_is,
    hold_a_poll,
    kill_when_quiet,
    kinds_of,
    none_pending,
    post,
    reprice,
    set_up,
    start_trial,
    wait_for,
)
from tests.hardening.test_kill_and_faults import Watch, _read, watched_client
from tests.smtp import SmtpInbox, smtp_server


@pytest.fixture
def smtp() -> Iterator[tuple[SmtpInbox, int]]:
    with smtp_server() as served:
        yield served


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    """The in-process tests here check what is refused before anything is stored: SQLite
    only (the kill test takes its own PostgreSQL database)."""
    shutil.copy(sqlite_template, tmp_path / "refusals.db")
    return f"sqlite+aiosqlite:///{tmp_path / 'refusals.db'}"


async def test_ssrf_destinations_are_refused_when_made(
    settings: Settings, nursery: trio.Nursery
) -> None:
    """422 `destination_refused`, in words, for every webhook or Discord destination the
    service must not send to; only the exact allowlisted origin passes; nothing is stored."""
    allowed = "http://127.0.0.1:8123"
    service, stop = await start_service(
        nursery, settings.model_copy(update={"outbound_allow": (allowed,)})
    )
    refused = [
        ("webhook", "https://127.0.0.1/hook"),
        ("webhook", "https://[::1]/hook"),
        ("webhook", "https://10.1.2.3/hook"),
        ("webhook", "https://169.254.169.254/latest/meta-data/"),
        ("webhook", "https://2130706433/hook"),  # 127.0.0.1 in disguise
        ("webhook", "https://0x7f.0.0.1/hook"),
        ("webhook", "https://localhost/hook"),
        ("webhook", "https://hooks.invalid/hook"),  # resolves to nothing
        ("webhook", "http://hooks.example.com/hook"),  # not https
        ("webhook", "http://127.0.0.1:8124/hook"),  # the allowlisted host, another port
        ("webhook", "https://127.0.0.1:8123/hook"),  # the allowlisted port, another scheme
        ("discord", "https://evil.example/api/webhooks/1/" + "t" * 40),
        ("discord", "https://127.0.0.1/api/webhooks/1/" + "t" * 40),
    ]
    async with service.client() as browser:
        await signed_in(browser)
        token = await create_token(browser, ["read", "write"])
    async with service.client(headers=bearer(token)) as client:
        for kind, url in refused:
            answer = await client.post(
                "/api/notifications/channels", json={"kind": kind, "name": "x", "url": url}
            )
            body = assert_envelope(answer, 422, "destination_refused")
            assert "URL" in str(body["error"]["message"]), (url, body)  # type: ignore[index]
        assert (await client.get("/api/notifications/channels")).json()["channels"] == []
        made = await client.post(
            "/api/notifications/channels",
            json={"kind": "webhook", "name": "local", "url": f"{allowed}/hook"},
        )
        assert made.status_code == 201, made.text
    stop.set()


def _rules(world: World) -> dict[str, Want]:
    """One rule per channel kind, its filters chosen from the listings the simulator will
    bring in the run's first simulated hours, so that each selects some and leaves some."""
    start = world.config.start
    coming = [item for item in world.listings if start < item.born < start + 8 * 3600]
    brands = [world.brands[b] for b, _ in Counter(i.brand_id for i in coming).most_common(2)]
    prices = sorted(i.price for i in coming)
    low, high = prices[len(prices) // 3], prices[2 * len(prices) // 3]
    # Excluded: the two brands most common among the included, so the exclusion has work to
    # do however late the first poll comes on a busy machine (one brand's listings came
    # only before and after one run's first poll).
    included = [i for i in coming if world.categories[i.category_id] in ("Jeans", "Coats")]
    excluded = [world.brands[b] for b, _ in Counter(i.brand_id for i in included).most_common(2)]
    return {
        "webhook": Want("Everything new", ("new_listing", "price_drop")),
        "telegram": Want("Two brands", ("new_listing",), brands=tuple(brands)),
        "discord": Want("Mid-priced", ("new_listing", "price_drop"), price_min=low, price_max=high),
        "email": Want(
            "Jeans and coats",
            ("new_listing",),
            include=("jeans", "coats"),
            exclude=tuple(brand.lower() for brand in excluded),
        ),
    }


@pytest.mark.postgres
@pytest.mark.soak
async def test_alerts_reach_every_channel_exactly_once_across_kill_9_and_an_outage(
    postgres_url: str, tmp_path: Path, nursery: trio.Nursery, smtp: tuple[SmtpInbox, int]
) -> None:
    run = await set_up(postgres_url, tmp_path, nursery, smtp)
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
                await wait_for("no alert pending", lambda: none_pending(client))
                with trio.move_on_after(ENOUGH) as late:
                    while not await arrived(run, store):
                        await trio.sleep(0.1)
                assert not late.cancelled_caught, f"not every alert arrived: {run.arrivals}"
                failed = await client.get(
                    "/api/notifications/notifications", params={"status": "failed"}
                )
                hook_deliveries = await deliveries(client, run.channels["webhook"])
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
    # The kill cut a poll: what appeared meanwhile was first seen after the restart, and
    # alerted then. The outage held alerts back: they were tried again and delivered.
    after_kill = recorded.first_seen_in_polls_after(run.polls_before_kill)
    assert after_kill and after_kill <= {i for i, _ in run.received()["webhook"]}
    webhook = run.channels["webhook"]
    retried = [n for n in outbox if n.channel_id == webhook and n.attempts > 1]
    assert retried, "no alert waited for the webhook receiver to recover"

    # The outage as the delivery log told it: failed attempts with the error in words, then
    # successes again (and every alert that waited got there, checked above).
    failures = [d for d in hook_deliveries if not d["ok"] and not d["test"]]
    assert len(failures) >= 3 and run.hook.failures >= 3, (failures, run.hook.failures)
    assert all(d["status_code"] == 500 for d in failures), failures
    assert all("answered 500 Internal Server Error" in str(d["error"]) for d in failures)
    last_failure = max(d["attempted_at"] for d in failures)
    assert any(d["ok"] and d["attempted_at"] > last_failure for d in hook_deliveries)

    await _forged_and_replayed_are_refused(run.hook)


async def _configure(run: Run, store: Store, wants: dict[str, Want]) -> None:
    """Sign up (the trial through its mailed link), make a token, then with the token: the
    four channels, a rule for each, and the monitor, polled until it has bootstrapped."""
    async with watched_client(run.running, run.server_errors) as browser:
        email = await signed_in(browser, trial=False)
        await start_trial(browser, run.inbox, email)
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
            created = await post(client, "/api/notifications/channels", body)
            run.channels[kind] = str(created["id"])
            if kind == "email":  # another address than the account's: its recipient agrees
                await confirm_recipient(client, run.inbox, ALERTS_TO)
            if kind == "webhook":
                assert str(created["signing_secret"]).startswith("whsec_"), created
                run.hook.secret = str(created["signing_secret"])
            rule = wants[kind].body(run.channels[kind])
            run.rules[kind] = str((await post(client, "/api/notifications/rules", rule))["id"])
        url = f"{run.origin}/catalog?order=newest_first"
        started = await post(client, "/api/monitoring/start", {"url": url, "interval_seconds": 1})
        run.monitor_id = str(started["id"])
        await Watch([run.monitor_id]).polls_reach(client, {run.monitor_id: 3}, ENOUGH)
    monitor = await store.monitors.get(run.monitor_id, None)
    assert monitor is not None
    run.workspace_id = monitor.workspace_id


async def _first_life(run: Run, store: Store) -> None:
    """Alerts flow; prices move (four drops and a rise, on listings the monitor knows); then
    SIGKILL mid-poll while nothing is being sent."""
    watch = Watch([run.monitor_id])
    await wait_for("eight webhook alerts", lambda: len(run.hook.accepted) >= 8)
    known = {r.item_id async for r in store.monitors.iter_listings(run.monitor_id)}
    live = [i.id for i in run.world.live(run.app.sim_now(), FeedFilter())[:40] if i.id in known]
    assert len(live) >= 5, live
    for item_id in live[:4]:
        reprice(run.world, item_id, Decimal("0.75"))
    reprice(run.world, live[4], Decimal("1.2"))
    await wait_for("a price drop alert", lambda: "price_drop" in kinds_of(run.hook))
    async with run.client() as client:
        run.polls_before_kill = (await watch.polls(client))[run.monitor_id]
    await kill_when_quiet(run, store, await hold_a_poll(run))


async def _second_life(run: Run, store: Store) -> None:
    """Polls resume; a listing first seen after the restart drops too (both kinds for it);
    the webhook receiver fails (500) until the channel shows `failing` with three attempts
    logged, then recovers; then the market freezes mid-poll, the monitor is paused and the
    service is killed, quietly."""
    before = run.polls_before_kill
    hook_channel = run.channels["webhook"]
    async with run.client() as client:
        await Watch([run.monitor_id]).polls_reach(client, {run.monitor_id: before + 2}, ENOUGH)
        fresh = await first_seen_after(store, run.monitor_id, before)
        if fresh is not None:
            reprice(run.world, fresh, Decimal("0.8"))
        count = len(run.hook.accepted)
        await wait_for("eight more webhook alerts", lambda: len(run.hook.accepted) >= count + 8)

        run.hook.failing = True
        await wait_for(
            "the webhook channel failing, three failed attempts logged",
            lambda: failing(client, hook_channel, 3),
        )
        health = await channel(client, hook_channel)
        assert health["health"] == "failing" and health["failing_since"], health
        assert "500 Internal Server Error" in str(health["last_error"]), health
        run.hook.failing = False
        await wait_for(
            "the webhook channel healthy again",
            lambda: health_is(client, hook_channel, "healthy"),
        )
        count = len(run.hook.accepted)
        await wait_for("five more webhook alerts", lambda: len(run.hook.accepted) >= count + 5)

        # The end of polling: a poll held half done, the monitor paused, the service
        # killed; the last life only sends what is left.
        held = await hold_a_poll(run)
        paused = await client.post(f"/api/monitoring/{run.monitor_id}/pause")
        assert paused.status_code == 200, paused.text
        await kill_when_quiet(run, store, held)


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
    # The run met what it is about: rules that left listings out (the e-mail's for a word it
    # excludes), drops, and a rise that alerted nobody.
    news = recorded.first_seen_after_bootstrap()
    for kind in ("telegram", "discord", "email"):
        assert len([a for a in received[kind] if a[1] == "new_listing"]) < len(news), kind
    titles = [(recorded.listings[i].title or "").casefold() for i in news]
    email = wants["email"]
    assert any(
        any(k in t for k in email.include) and any(k in t for k in email.exclude) for t in titles
    ), f"no listing was left out for {email.exclude}: {titles}"
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
    moved = str(int(genuine.headers["webhook-timestamp"]) + 30)  # still within tolerance
    refreshed = {**genuine.headers, "webhook-timestamp": moved}
    stale_time = int(datetime.now(UTC).timestamp()) - 600
    stale_id = f"ntf_stale_{secrets.token_hex(6)}"
    stale = webhook_headers(hook.secret, stale_id, genuine.body, timestamp=stale_time)
    # The stale one is genuinely signed: the same with a current time verifies.
    Webhook(hook.secret).verify(genuine.body, webhook_headers(hook.secret, stale_id, genuine.body))
    attempts = [
        ("a body signed with another secret", forged, genuine.body),
        ("a genuine request with its body changed", genuine.headers, tampered_body),
        ("a replay with a fresh timestamp", refreshed, genuine.body),
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
