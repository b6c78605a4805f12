"""The dispatcher over real sockets and a real database: what is due arrives once, a failing
receiver gets the same alerts again after backoff and nothing twice, a 429's wait is kept,
a burst is batched, a destination that will never accept fails at once, and a channel that
fails for too long is disabled with its owner told."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
import trio

from engine import (
    DispatchSettings,
    NotificationDispatcher,
    SecretBox,
    check_destination,
    courier,
    decide_poll,
)
from engine.notifications import new_signing_secret, open_outbound
from scrapers import normalise_origin
from store import ChannelRecord, NewChannel, Store
from tests.notify_fakes import FakeTelegram, WebhookReceiver
from tests.store.notify_helpers import (
    add_niche_alerts,
    listing,
    new_monitor,
    new_rule,
    outbox,
    poll,
)
from tests.waiting import eventually

KEY = "dispatcher-test-secret-key"
TOKEN = "123456789:" + "A" * 35
DEADLINE = 60.0


def _niche_alerts(*brands: str) -> list[dict[str, Any]]:
    return [
        {
            "kind": "new_hot_niche",
            "niche": {"label": f"Jeans · {b}", "category_id": 5, "brand": b, "size": None,
                      "condition": None, "sold": 7},
            "reason": f"{b} jeans are newly hot",
            "figures": {"sold_recent": 7},
        }
        for b in brands
    ]  # fmt: skip


@dataclass
class Mails:
    sent: list[tuple[str, str, str]] = field(default_factory=list)

    async def send(self, to: str, subject: str, body: str) -> None:
        self.sent.append((to, subject, body))


@asynccontextmanager
async def dispatching(
    store: Store, *origins: str, telegram: str = "", **settings: Any
) -> AsyncIterator[tuple[NotificationDispatcher, Mails]]:
    allow = tuple(normalise_origin(o) for o in origins)
    mails = Mails()
    async with open_outbound(allow, telegram_api_base=telegram or "http://127.0.0.1:9") as http:
        send = courier(
            store, SecretBox(KEY), http, mail=mails.send,
            telegram_api_base=telegram or "http://127.0.0.1:9", allow=allow,
        )  # fmt: skip
        values: dict[str, Any] = {
            "sweep_seconds": 0.05, "retry_base_seconds": 0.05, "retry_cap_seconds": 0.3,
        }  # fmt: skip
        dispatcher = NotificationDispatcher(
            store,
            send,
            DispatchSettings(node_id="node-test", **(values | settings)),
            mail_owner=mails.send,
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(dispatcher.run)
            yield dispatcher, mails
            nursery.cancel_scope.cancel()


async def _channel(store: Store, workspace_id: str, kind: str, given: dict[str, Any],
                   secret: str | None = None, *origins: str) -> ChannelRecord:  # fmt: skip
    allow = tuple(normalise_origin(o) for o in origins)
    found = await check_destination(kind, given, allow=allow, signing_secret=secret)
    return await store.notify.add_channel(
        NewChannel(
            workspace_id=workspace_id,
            kind=found.kind,  # type: ignore[arg-type]
            name=f"my {kind}",
            hint=found.hint,
            secret_box=SecretBox(KEY).seal(found.secrets),
        )
    )


async def _settled(store: Store, workspace_id: str, count: int) -> list[Any]:
    """The workspace's notifications once `count` of them are no longer pending."""
    with trio.fail_after(DEADLINE):
        while True:
            notes = await outbox(store, workspace_id)
            if sum(n.status != "pending" for n in notes) >= count:
                return notes
            await trio.sleep(0.05)


async def test_a_failing_receiver_gets_everything_once_after_it_recovers(store: Store) -> None:
    secret = new_signing_secret()
    async with WebhookReceiver(secret) as receiver:
        monitor_id, workspace_id = await new_monitor(store)
        channel = await _channel(
            store, workspace_id, "webhook", {"url": receiver.url}, secret, receiver.url
        )
        await new_rule(store, workspace_id, ("new_hot_niche",))
        brands = ("Levi's", "Diesel", "Lee")
        await add_niche_alerts(store, workspace_id, monitor_id, _niche_alerts(*brands))
        receiver.failing_status = 500
        async with dispatching(store, receiver.url):
            await receiver.wait_until(lambda: len(receiver.requests) >= 4, within=DEADLINE)
            failing = await store.notify.channel(workspace_id, channel.id)
            assert failing is not None and failing.health == "failing"
            assert "500" in (failing.last_error or "")
            receiver.failing_status = None
            notes = await _settled(store, workspace_id, len(brands))
        assert {n.status for n in notes} == {"delivered"}
        ids = [a.id for a in receiver.accepted]
        assert sorted(ids) == sorted(n.id for n in notes)  # each once, none twice
        assert {a.payload["niche"]["brand"] for a in receiver.accepted} == set(brands)
        assert all(a.payload["type"] == "niche.new_hot" for a in receiver.accepted)
        log, total = await store.notify.deliveries(workspace_id, channel_id=channel.id)
        assert total == len(log) >= 2
        assert any(not d.ok and "500" in (d.error or "") for d in log)
        assert any(d.ok for d in log)
        healthy = await store.notify.channel(workspace_id, channel.id)
        assert healthy is not None and healthy.health == "healthy"


async def test_a_channel_claimed_again_before_its_last_send_has_finished(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store releases a channel's claim when a send's outcome commits; the send gives its
    slot back a moment later. A loop that claims the channel again in between (its retry is
    due) starts a second send: that must not crash the dispatcher (it did, on a busy machine:
    one slot token per channel, held twice), and nothing may arrive twice."""
    record_outcome = store.notify.record_outcome
    claim_due = store.notify.claim_due
    claimed_again = trio.Event()
    outcomes = 0

    async def claiming(*args: Any, **kwargs: Any) -> Any:
        claimed = await claim_due(*args, **kwargs)
        if claimed and outcomes:
            claimed_again.set()
        return claimed

    async def slow_return(*args: Any, **kwargs: Any) -> Any:
        # The first outcome commits, then its send is held until the loop has claimed the
        # channel again: the window a busy machine opens by chance, held open here.
        nonlocal outcomes
        answer = await record_outcome(*args, **kwargs)
        outcomes += 1
        if outcomes == 1:
            with trio.fail_after(DEADLINE):
                await claimed_again.wait()
        return answer

    monkeypatch.setattr(store.notify, "claim_due", claiming)
    monkeypatch.setattr(store.notify, "record_outcome", slow_return)
    secret = new_signing_secret()
    async with WebhookReceiver(secret) as receiver:
        monitor_id, workspace_id = await new_monitor(store)
        await _channel(store, workspace_id, "webhook", {"url": receiver.url}, secret, receiver.url)
        await new_rule(store, workspace_id, ("new_hot_niche",))
        await add_niche_alerts(store, workspace_id, monitor_id, _niche_alerts("Levi's"))
        receiver.failing_status = 500  # the first send fails: its retry is due at once
        async with dispatching(store, receiver.url):
            with trio.fail_after(DEADLINE):
                await claimed_again.wait()
            receiver.failing_status = None
            notes = await _settled(store, workspace_id, 1)
    assert [n.status for n in notes] == ["delivered"]
    assert [a.id for a in receiver.accepted] == [notes[0].id]


async def test_a_burst_is_batched_and_a_429_wait_is_kept(store: Store) -> None:
    async with FakeTelegram(TOKEN) as telegram:
        monitor_id, workspace_id = await new_monitor(store)
        await _channel(store, workspace_id, "telegram", {"bot_token": TOKEN, "chat_id": 4242})
        await new_rule(store, workspace_id, ("new_hot_niche",))
        brands = tuple(f"Brand {i:02d}" for i in range(25))
        await add_niche_alerts(store, workspace_id, monitor_id, _niche_alerts(*brands))
        telegram.rate_limit(times=1, retry_after=3)  # longer than pacing and backoff
        async with dispatching(store, telegram=telegram.url):
            await telegram.wait_until(lambda: len(telegram.requests) >= 1, within=DEADLINE)
            refused_at = trio.current_time()
            await telegram.wait_until(lambda: len(telegram.requests) >= 2, within=DEADLINE)
            assert trio.current_time() - refused_at >= 2.9  # Telegram said: three seconds
            notes = await _settled(store, workspace_id, len(brands))
        assert {n.status for n in notes} == {"delivered"}
        # 25 alerts, at most 20 a message: two messages, not 25 (and the refused one).
        assert len(telegram.messages) == 2
        text = "\n".join(str(m) for m in telegram.messages)
        assert all(brand in text for brand in brands)


async def test_a_wrong_token_fails_at_once_and_a_long_failure_disables(store: Store) -> None:
    async with FakeTelegram(TOKEN) as telegram:
        monitor_id, workspace_id = await new_monitor(store)
        wrong = "987654321:" + "B" * 35
        channel = await _channel(
            store, workspace_id, "telegram", {"bot_token": wrong, "chat_id": 1}
        )
        await new_rule(store, workspace_id, ("new_hot_niche",))
        await add_niche_alerts(store, workspace_id, monitor_id, _niche_alerts("Levi's"))
        # Failing for longer than `disable_after` (here at the first failure) disables the
        # channel and tells the workspace's owner, once.
        async with dispatching(store, telegram=telegram.url, disable_after=timedelta(0)) as (
            _,
            mails,
        ):
            notes = await _settled(store, workspace_id, 1)
            with trio.fail_after(DEADLINE):
                while not mails.sent:
                    await trio.sleep(0.05)
        assert [n.status for n in notes] == ["failed"]
        assert len(telegram.requests) == 1  # a 401 is not tried again
        disabled = await store.notify.channel(workspace_id, channel.id)
        assert disabled is not None and disabled.health == "disabled"
        assert disabled.disabled_reason
        assert len(mails.sent) == 1
        owner = await store.notify.owner_email(workspace_id)
        to, subject, body = mails.sent[0]
        assert to == owner and "my telegram" in subject and "401" in body


async def test_a_restarted_node_takes_its_own_claims_back_at_once(store: Store) -> None:
    secret = new_signing_secret()
    async with WebhookReceiver(secret) as receiver:
        monitor_id, workspace_id = await new_monitor(store)
        await _channel(store, workspace_id, "webhook", {"url": receiver.url}, secret, receiver.url)
        await new_rule(store, workspace_id, ("new_hot_niche",))
        await add_niche_alerts(store, workspace_id, monitor_id, _niche_alerts("Levi's"))
        # A life of this node claimed the channel and was killed before sending: its claim
        # would hold for a minute; the node starting again gives it back and sends now.
        [claimed] = await store.notify.claim_due("node-test", claim_seconds=600)
        assert await store.notify.claim_due("node-test") == []
        async with dispatching(store, receiver.url):
            notes = await _settled(store, workspace_id, 1)
        assert [n.status for n in notes] == ["delivered"]
        assert [a.id for a in receiver.accepted] == [claimed.notifications[0].id]


async def test_a_poll_that_queues_alerts_wakes_the_dispatcher(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    looks: list[int] = []  # the number of channels each of the dispatcher's looks claimed
    claim_due = store.notify.claim_due

    async def counted(*args: Any, **kwargs: Any) -> Any:
        claimed = await claim_due(*args, **kwargs)
        looks.append(len(claimed))
        return claimed

    monkeypatch.setattr(store.notify, "claim_due", counted)
    secret = new_signing_secret()
    async with WebhookReceiver(secret) as receiver:
        monitor_id, workspace_id = await new_monitor(store)
        await _channel(store, workspace_id, "webhook", {"url": receiver.url}, secret, receiver.url)
        await new_rule(store, workspace_id, ("new_listing",))
        at = store.clock() - timedelta(minutes=1)  # alerts are due at once
        await store.monitors.record_poll(
            monitor_id, poll(at, [listing(1, "30")]), decide=decide_poll
        )  # bootstrap
        # The sweep would come in five minutes: only the poll's own news can bring the
        # alert sooner.
        async with dispatching(store, receiver.url, sweep_seconds=300):
            await eventually(lambda: bool(looks), within=DEADLINE)
            assert looks[0] == 0  # its first look found nothing: it sleeps until woken
            started = trio.current_time()
            await store.monitors.record_poll(
                monitor_id,
                poll(at + timedelta(seconds=1), [listing(1, "30"), listing(2, "9")]),
                decide=decide_poll,
            )
            await receiver.wait_until(lambda: len(receiver.accepted) == 1, within=DEADLINE)
            assert trio.current_time() - started < 30
        assert receiver.accepted[0].payload["listing"]["item_id"] == 2
