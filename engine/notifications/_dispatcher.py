"""The dispatcher: the one actor that takes alerts out of the outbox and delivers them.

Alerts are written by the poll that found them, in its transaction (`store.notify`); this
actor only moves them on. Each round it claims channels with something due (a claim is a
short lease on the channel's row, so two nodes never send one channel's batch at once),
sends each channel's due alerts as one batch, and records the outcome: delivered, or tried
again later (capped exponential backoff with full jitter, never before a `Retry-After`), or
failed for good (a destination that says it will never accept: a wrong bot token, a deleted
webhook). Channels are paced (`next_send_at`), so a burst of listings becomes a few batched
messages rather than a ban from Telegram or Discord. A channel failing for longer than
`disable_after` is disabled by the store, and its workspace's owner is told by e-mail once.

Delivery is at least once with stable ids: a node that dies between a send and its record
leaves the alerts pending, and they go again once the claim lapses (a webhook receiver
recognises them by `webhook-id`). Everything else that goes wrong (the database away, a bug)
escapes to the supervisor, which restarts the actor; cancellation propagates, and a batch
cut short by it is left claimed until its claim lapses.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import trio

from store import ChannelBatch, ChannelRecord, DeliveryOutcome, Store

from ._answers import SendResult

log = logging.getLogger(__name__)

Courier = Callable[[ChannelBatch], Awaitable[SendResult]]
"""`await courier(batch)`: send one channel's batch; never raises for a failed delivery
(the result says so), only for cancellation."""

MailOwner = Callable[[str, str, str], Awaitable[object]]
"""`await mail(to, subject, body)`."""

# The gap between two messages to one destination. Telegram allows about one message a
# second to a chat; Discord's webhooks about five in two seconds; e-mail is batched harder
# so that a burst of listings is one message, not fifty.
PACE_SECONDS: dict[str, float] = {"telegram": 1.1, "discord": 0.6, "webhook": 0.0, "email": 5.0}


@dataclass(frozen=True)
class DispatchSettings:
    node_id: str
    sweep_seconds: float = 0.5  # how often an idle dispatcher looks for due alerts
    concurrency: int = 8  # channels being sent to at once
    batch: int = 20  # alerts per message at most
    claim_seconds: float = 60.0  # longer than any send takes (senders time out in 15 s)
    retry_base_seconds: float = 1.0
    retry_cap_seconds: float = 900.0
    disable_after: timedelta = timedelta(hours=24)


def retry_delay(attempts: int, base: float, cap: float, retry_after: float | None) -> float:
    """Full jitter over a capped exponential, never before the destination's Retry-After."""
    ceiling = min(cap, base * 2 ** max(0, attempts))
    return max(retry_after or 0.0, random.uniform(base, max(base, ceiling)))


class DispatcherBoard:
    """What the dispatcher last said about itself, for the operators' status endpoint."""

    def __init__(self) -> None:
        self.restarts = 0
        self.last_error: str | None = None
        self.last_delivery_at: datetime | None = None
        self.failures_in_a_row = 0

    def restarted(self, error: str) -> None:
        self.restarts += 1
        self.last_error = error

    def snapshot(self, *, delivered: int, failed_sends: int, sending: int) -> dict[str, object]:
        at = self.last_delivery_at
        return {
            "state": "failing" if self.failures_in_a_row else "running",
            "delivered": delivered,
            "failed_sends": failed_sends,
            "sending": sending,
            "restarts": self.restarts,
            "last_delivery_at": at.isoformat() if at is not None else None,
            "failures_in_a_row": self.failures_in_a_row,
            "last_error": self.last_error,
        }


class NotificationDispatcher:
    def __init__(
        self,
        store: Store,
        courier: Courier,
        settings: DispatchSettings,
        *,
        mail_owner: MailOwner | None = None,
    ) -> None:
        self._store = store
        self._courier = courier
        self._settings = settings
        self._mail_owner = mail_owner
        self._slots = trio.CapacityLimiter(settings.concurrency)
        self._wake = trio.Event()
        # Alerts a poll of this node commits wake the dispatcher at once (the store calls
        # back on the Trio thread); others' are found by the sweep.
        store.notify.on_queued(self.wake)
        self.board = DispatcherBoard()
        self.delivered = 0  # alerts delivered by this actor (ops view, benchmarks)
        self.failed_sends = 0

    def status(self) -> dict[str, object]:
        """For the operators' status endpoint: counts since start, channels being sent to,
        restarts, the last delivery and the last error."""
        sending = self._settings.concurrency - math.floor(self._slots.available_tokens)
        return self.board.snapshot(
            delivered=self.delivered, failed_sends=self.failed_sends, sending=sending
        )

    def wake(self) -> None:
        """Look for due alerts now rather than at the next sweep."""
        self._wake.set()

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Deliver until cancelled. Sends run in a nursery of their own, so a slow destination
        holds only its own slot while the loop goes on claiming for the others."""
        # Claims this node id still holds are from a life cut short (a crash, `kill -9`, a
        # restart of this actor): nothing is being sent under them, so they are given back
        # now rather than after they lapse.
        await self._store.notify.release_all(self._settings.node_id)
        async with trio.open_nursery() as sends:
            task_status.started()
            while True:
                claimed = await self._claim()
                for batch in claimed:
                    # A borrower per send, not per channel: the store releases a channel's
                    # claim when its outcome commits, a moment before this send's `finally`
                    # gives its slot back, and the loop may claim that channel again between
                    # the two (its retry already due). That is a new batch, sent after the
                    # first one's outcome, so it must not share the first one's token.
                    borrower = object()
                    await self._slots.acquire_on_behalf_of(borrower)
                    sends.start_soon(self._send, batch, borrower)
                if claimed:
                    await trio.lowlevel.checkpoint()
                    continue
                with trio.move_on_after(self._settings.sweep_seconds):
                    await self._wake.wait()
                self._wake = trio.Event()

    async def _claim(self) -> list[ChannelBatch]:
        room = math.floor(self._slots.available_tokens)
        if room <= 0:
            return []
        return await self._store.notify.claim_due(
            self._settings.node_id,
            channels=room,
            batch=self._settings.batch,
            claim_seconds=self._settings.claim_seconds,
        )

    async def _send(self, batch: ChannelBatch, borrower: object) -> None:
        try:
            started = trio.current_time()
            result = await self._courier(batch)
            latency_ms = int((trio.current_time() - started) * 1000)
            everything = {n.id for n in batch.notifications}
            if result.ok and result.delivered and set(result.delivered) < everything:
                # One message held only part of the batch (Discord's ten embeds, Telegram's
                # 4096 characters): what it carried is delivered; the rest stays due and goes
                # in the next message, after the channel's pacing.
                batch = replace(batch, notifications=tuple(
                    n for n in batch.notifications if n.id in set(result.delivered)
                ))  # fmt: skip
            partly = set(result.delivered) if not result.ok else set()
            if partly:
                # A webhook batch that failed part-way: what arrived is delivered, only the
                # rest is tried again (and never sent twice).
                sent = replace(batch, notifications=tuple(
                    n for n in batch.notifications if n.id in partly
                ))  # fmt: skip
                batch = replace(batch, notifications=tuple(
                    n for n in batch.notifications if n.id not in partly
                ))  # fmt: skip
                done = SendResult(True, result.status_code, None, None)
                # The claim is kept until the rest's outcome below: released here, the loop
                # could claim the channel again and send the rest while it is still pending.
                await self._store.notify.record_outcome(
                    self._outcome(sent, done, latency_ms),
                    node_id=self._settings.node_id,
                    keep_claim=True,
                )
                self.delivered += len(sent.notifications)
            outcome = self._outcome(batch, result, latency_ms)
            channel = await self._store.notify.record_outcome(
                outcome, node_id=self._settings.node_id
            )
            if result.ok:
                self.delivered += len(batch.notifications)
                self.board.last_delivery_at = self._store.clock()
                self.board.failures_in_a_row = 0
            else:
                self.failed_sends += 1
                self.board.failures_in_a_row += 1
                self.board.last_error = result.error
                log.info(
                    "channel %s (%s): delivery failed (%s)",
                    batch.channel.id, batch.channel.kind, result.error,
                )  # fmt: skip
            if channel is not None and not channel.enabled and batch.channel.enabled:
                await self._tell_owner(channel)
        finally:
            self._slots.release_on_behalf_of(borrower)
            self.wake()  # a slot is free: claim again without waiting for the sweep

    def _outcome(self, batch: ChannelBatch, result: SendResult, latency_ms: int) -> DeliveryOutcome:
        now = self._store.clock()
        pace = PACE_SECONDS.get(batch.channel.kind, 0.0)
        retry_at: datetime | None = None
        if not result.ok and not result.permanent:
            attempts = max((n.attempts for n in batch.notifications), default=0)
            delay = retry_delay(
                attempts,
                self._settings.retry_base_seconds,
                self._settings.retry_cap_seconds,
                result.retry_after,
            )
            retry_at = now + timedelta(seconds=delay)
        # A destination that asked us to wait is not sent anything else before then either.
        wait = max(pace, result.retry_after or 0.0)
        return DeliveryOutcome(
            channel_id=batch.channel.id,
            notification_ids=tuple(n.id for n in batch.notifications),
            ok=result.ok,
            status_code=result.status_code,
            latency_ms=latency_ms,
            error=result.error,
            retry_at=retry_at,
            permanent=result.permanent,
            next_send_at=now + timedelta(seconds=wait),
            disable_after=self._settings.disable_after,
        )

    async def _tell_owner(self, channel: ChannelRecord) -> None:
        """One e-mail when a channel is disabled; a mail failure is logged, not retried
        (the channel's page says the same thing)."""
        if self._mail_owner is None:
            return
        owner = await self._store.notify.owner_email(channel.workspace_id)
        if owner is None:
            return
        body = (
            f"Nichescope stopped sending alerts to your {channel.kind} channel "
            f'"{channel.name}" ({channel.hint}).\n\n'
            f"Why: {channel.disabled_reason or channel.last_error or 'it kept failing'}\n\n"
            "Alerts for it are kept. Fix the destination, then enable the channel again on "
            "the Notifications page: what is still due will be sent."
        )
        try:
            await self._mail_owner(owner, f"Alerts paused: {channel.name}", body)
        except Exception as err:
            log.warning(
                "could not tell %s that channel %s was disabled: %r", owner, channel.id, err
            )
