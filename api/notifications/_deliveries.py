"""Sending a test, and reading what was sent: the delivery log and the alerts (outbox).

A test goes out at once, from the request, through the engine's own senders (the same code
the dispatcher uses, over the same guarded client), and is logged as a test delivery; it
never enters the outbox, so it is never retried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

import trio

from api.backend import Mailing
from api.http.errors import TooManyRequests
from api.http.ratelimit import SlidingWindowLimiter
from api.http.schemas import page_count
from api.notifications._channels import open_secrets, owned_channel
from api.notifications._confirm import ChannelUnconfirmed
from api.notifications._rules import owned_monitor_id
from engine.notifications import deliver, open_outbound, ping_notification
from store import DeliveryRecord, NotificationRecord, Store

PAGE_SIZE = 50
T = TypeVar("T")
TEST_TIMEOUT_SECONDS = 20.0


@dataclass(frozen=True, slots=True)
class TestOutcome:
    ok: bool
    status_code: int | None
    latency_ms: int
    error: str | None

    @property
    def message(self) -> str:
        if self.ok:
            return f"Delivered in {self.latency_ms} ms: the test message reached the destination."
        return f"Not delivered: {self.error or 'the destination did not accept it'}."


async def send_test(
    mailing: Mailing, limiter: SlidingWindowLimiter, workspace_id: str, channel_id: str
) -> TestOutcome:
    """Deliver a `test.ping` to the channel now and log it (test=True). A failed delivery is
    an outcome, not an error; like any delivery it tells the channel's health (a test never
    disables a channel). Bounded by `TEST_TIMEOUT_SECONDS` (then it failed, in words) and by
    `limiter`, `TESTS_PER_MINUTE` per workspace (`TooManyRequests`); `ChannelUnconfirmed`
    (409) for an e-mail channel its recipient has not confirmed; cancellation propagates
    unlogged."""
    store, settings = mailing.store, mailing.settings
    channel = await owned_channel(store, workspace_id, channel_id)
    if channel.confirmed_at is None:
        raise ChannelUnconfirmed()  # a test is mail too, to someone who never agreed
    wait = limiter.hit(workspace_id)
    if wait:
        raise TooManyRequests(wait, "Too many test messages; try again in a minute")
    secrets = open_secrets(settings, channel)
    ping = ping_notification(store.clock())
    started = trio.current_time()
    ok, status_code = False, None
    error: str | None = f"no answer within {TEST_TIMEOUT_SECONDS:.0f} seconds"
    with trio.move_on_after(TEST_TIMEOUT_SECONDS):
        async with open_outbound(
            settings.outbound_allow, telegram_api_base=settings.telegram_api_base
        ) as http:
            result = await deliver(
                channel,
                secrets,
                (ping,),
                http,
                mailing.mailer.send,
                telegram_api_base=settings.telegram_api_base,
                allow=settings.outbound_allow,
            )
        ok, status_code, error = result.ok, result.status_code, result.error
    outcome = TestOutcome(ok, status_code, int((trio.current_time() - started) * 1000), error)
    await store.notify.log_test(
        workspace_id, channel.id, outcome.ok, outcome.status_code, outcome.latency_ms,
        outcome.error,
    )  # fmt: skip
    return outcome


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    page: int
    total: int

    @property
    def pages(self) -> int:
        return page_count(self.total, PAGE_SIZE)


async def list_deliveries(
    store: Store, workspace_id: str, channel_id: str | None, page: int
) -> Page[DeliveryRecord]:
    """The delivery log, newest first (`NotFound` for another workspace's channel)."""
    if channel_id is not None:
        await owned_channel(store, workspace_id, channel_id)
    rows, total = await store.notify.deliveries(
        workspace_id, channel_id=channel_id, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE
    )
    return Page(rows, page, total)


async def list_notifications(
    store: Store, workspace_id: str, monitor_id: str | None, status: str | None, page: int
) -> Page[NotificationRecord]:
    """The alerts written for the workspace, newest first, by monitor and status."""
    if monitor_id is not None:
        await owned_monitor_id(store, workspace_id, monitor_id)
    rows, total = await store.notify.notifications(
        workspace_id,
        monitor_id=monitor_id,
        status=status,  # type: ignore[arg-type]
        offset=(page - 1) * PAGE_SIZE,
        limit=PAGE_SIZE,
    )
    return Page(rows, page, total)
