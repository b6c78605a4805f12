"""The trio-facing facade of notifications: `store.notify`.

Each method is one unit of work (one transaction); `now` defaults to `store.clock()`. A
database outage raises `DatabaseUnavailable` (from `Store.unit`) and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy.orm import Session

from . import claims as claims
from . import outbox as outbox
from . import queries as repo
from . import reads as reads
from . import retention as retention
from .alert_decisions import NicheAlertRules, NicheFinding
from .records import (
    ChannelBatch,
    ChannelRecord,
    DeliveryOutcome,
    DeliveryRecord,
    NewChannel,
    NewRule,
    NotificationRecord,
    NotificationStatus,
    RuleRecord,
)

if TYPE_CHECKING:
    from .._store import Store

T = TypeVar("T")


class NotifyStore:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._listeners: list[Callable[[], None]] = []

    # -- news of alerts queued in this process -------------------------------------------------

    def on_queued(self, listener: Callable[[], None]) -> None:
        """Call `listener()` (on the Trio thread) whenever a unit of work of this process has
        committed alerts to the outbox, so the dispatcher sends them now rather than at its
        next sweep. Other nodes' alerts are found by the sweep."""
        self._listeners.append(listener)

    async def unit(self, work: Callable[[Session], T]) -> T:
        """`store.unit(work)`, telling the listeners once it committed alerts (the outbox
        writers count what they wrote in the session's `info`)."""
        queued = 0

        def counting(db: Session) -> T:
            nonlocal queued
            result = work(db)
            queued = db.info.pop(outbox.QUEUED, 0)
            return result

        result = await self._store.unit(counting)
        if queued:
            for listener in self._listeners:
                listener()
        return result

    # -- channels ------------------------------------------------------------------------------

    async def add_channel(self, new: NewChannel, *, at_most: int | None = None) -> ChannelRecord:
        """With `at_most`: `QuotaFull` when the workspace has as many channels, checked
        atomically with the insert (`store/accounts/quotas.py`)."""
        now = self._store.clock()
        return await self._store.unit(lambda db: repo.add_channel(db, new, now, at_most=at_most))

    async def channels(self, workspace_id: str) -> list[ChannelRecord]:
        return await self._store.unit(lambda db: repo.list_channels(db, workspace_id))

    async def channel(self, workspace_id: str, channel_id: str) -> ChannelRecord | None:
        return await self._store.unit(lambda db: repo.get_channel(db, workspace_id, channel_id))

    async def update_channel(
        self,
        workspace_id: str,
        channel_id: str,
        *,
        name: str | None = None,
        enabled: bool | None = None,
        secret_box: str | None = None,
        hint: str | None = None,
    ) -> ChannelRecord | None:
        """Change what is given; enabling clears `disabled_reason` and `failing_since`.
        None if the channel is not the workspace's."""
        return await self._store.unit(
            lambda db: repo.update_channel(
                db,
                workspace_id,
                channel_id,
                name=name,
                enabled=enabled,
                secret_box=secret_box,
                hint=hint,
            )
        )

    async def delete_channel(self, workspace_id: str, channel_id: str) -> bool:
        """Delete the channel with its outbox rows and log; its id leaves every rule (a rule
        left with no channel is disabled). False if not the workspace's."""
        return await self._store.unit(lambda db: repo.delete_channel(db, workspace_id, channel_id))

    async def channel_secret(self, channel_id: str) -> str | None:
        """The channel's sealed secrets (SecretBox ciphertext), for the dispatcher only."""
        return await self._store.unit(lambda db: repo.channel_secret(db, channel_id))

    # -- rules ---------------------------------------------------------------------------------

    async def add_rule(
        self, workspace_id: str, rule: NewRule, *, at_most: int | None = None
    ) -> RuleRecord:
        """`NotFoundInWorkspace` if its monitor or a channel is not the workspace's;
        `QuotaFull` past `at_most` rules, checked atomically with the insert
        (`store/accounts/quotas.py`)."""
        now = self._store.clock()
        return await self._store.unit(
            lambda db: repo.add_rule(db, workspace_id, rule, now, at_most=at_most)
        )

    async def rules(
        self, workspace_id: str, *, monitor_id: str | None = None, defaults_only: bool = False
    ) -> list[RuleRecord]:
        """Every rule of the workspace; with `monitor_id`, that monitor's own; with
        `defaults_only`, the workspace defaults (no monitor)."""
        return await self._store.unit(
            lambda db: repo.list_rules(
                db, workspace_id, monitor_id=monitor_id, defaults_only=defaults_only
            )
        )

    async def rule(self, workspace_id: str, rule_id: str) -> RuleRecord | None:
        return await self._store.unit(lambda db: repo.get_rule(db, workspace_id, rule_id))

    async def replace_rule(
        self, workspace_id: str, rule_id: str, rule: NewRule
    ) -> RuleRecord | None:
        """None if the rule is not the workspace's; `NotFoundInWorkspace` as `add_rule`."""
        now = self._store.clock()
        return await self._store.unit(
            lambda db: repo.replace_rule(db, workspace_id, rule_id, rule, now)
        )

    async def delete_rule(self, workspace_id: str, rule_id: str) -> bool:
        return await self._store.unit(lambda db: repo.delete_rule(db, workspace_id, rule_id))

    async def set_monitor_rules(
        self,
        workspace_id: str,
        monitor_id: str,
        rules: Sequence[NewRule],
        *,
        at_most: int | None = None,
    ) -> list[RuleRecord]:
        """Replace the monitor's own rules in one transaction (all or nothing);
        `NotFoundInWorkspace` if the monitor or a channel is not the workspace's, `QuotaFull`
        if the workspace's other rules and these would pass `at_most`."""
        now = self._store.clock()
        return await self._store.unit(
            lambda db: repo.set_monitor_rules(
                db, workspace_id, monitor_id, rules, now, at_most=at_most
            )
        )

    async def effective_rules(self, workspace_id: str, monitor_id: str) -> list[RuleRecord]:
        """The monitor's own enabled rules if it has any, else the enabled defaults."""
        return await self._store.unit(lambda db: repo.effective_rules(db, workspace_id, monitor_id))

    # -- the outbox, for the dispatcher ---------------------------------------------------------

    async def claim_due(
        self,
        node_id: str,
        *,
        now: datetime | None = None,
        channels: int = 16,
        batch: int = 20,
        claim_seconds: float = 60.0,
    ) -> list[ChannelBatch]:
        """Claim channels with due notifications for `claim_seconds` (see `store/notify/claims.py`):
        no other node gets them until `record_outcome`/`release` or the claim lapses."""
        at = now or self._store.clock()
        return await self._store.unit(
            lambda db: claims.claim_due(
                db, node_id, now=at, channels=channels, batch=batch, claim_seconds=claim_seconds
            )
        )

    async def record_outcome(
        self,
        outcome: DeliveryOutcome,
        *,
        node_id: str,
        now: datetime | None = None,
        keep_claim: bool = False,
    ) -> ChannelRecord | None:
        """Log and apply one attempt; the channel only when this outcome disabled it (e-mail
        the owner then), else None. Releases the claim if still this node's, unless
        `keep_claim` (more of the same batch is still to be recorded)."""
        at = now or self._store.clock()
        return await self._store.unit(
            lambda db: claims.record_outcome(
                db, outcome, node_id=node_id, now=at, keep_claim=keep_claim
            )
        )

    async def release(self, channel_id: str, node_id: str) -> None:
        await self._store.unit(lambda db: claims.release(db, channel_id, node_id))

    async def release_all(self, node_id: str) -> int:
        """Give back every claim `node_id` holds (a dispatcher starting again under the same
        node id: its earlier life was cut short); the number released."""
        return await self._store.unit(lambda db: claims.release_all(db, node_id))

    async def next_due_at(self) -> datetime | None:
        """The earliest moment anything pending could be sent (None: nothing pending)."""
        return await self._store.unit(claims.next_due_at)

    async def log_test(
        self,
        workspace_id: str,
        channel_id: str,
        ok: bool,
        status_code: int | None,
        latency_ms: int,
        error: str | None,
    ) -> bool:
        """Log a test the API sent (test=True); False if the channel is not the
        workspace's."""
        now = self._store.clock()
        # A test is one attempt at an empty batch, never retried.
        outcome = DeliveryOutcome(
            channel_id=channel_id,
            notification_ids=(),
            ok=ok,
            status_code=status_code,
            latency_ms=latency_ms,
            error=error,
            retry_at=None,
        )
        return await self._store.unit(lambda db: claims.log_test(db, workspace_id, outcome, now))

    async def add_niche_alerts(
        self,
        workspace_id: str,
        monitor_id: str,
        findings: Sequence[NicheFinding],
        *,
        decide: NicheAlertRules,
        now: datetime | None = None,
    ) -> int:
        """Queue the niche alerts `decide` (the engine's rules, `engine.decide_niche_alerts`)
        draws from the analysis' `findings` for the monitor's rules, in one transaction;
        idempotent per (rule, channel, kind, niche). Returns rows written."""
        at = now or self._store.clock()
        return await self.unit(
            lambda db: outbox.write_niche_alerts(db, workspace_id, monitor_id, findings, at, decide)
        )

    async def drop_old_deliveries(self, before: datetime, after: int) -> tuple[int, int] | None:
        """One step of the delivery log's housekeeping (`retention.drop_old_deliveries`):
        (the last id deleted, how many rows attempted before `before` went above `after`),
        or None when none is left."""
        return await self.unit(lambda db: retention.drop_old_deliveries(db, before, after))

    # -- reading -------------------------------------------------------------------------------

    async def deliveries(
        self,
        workspace_id: str,
        *,
        channel_id: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[list[DeliveryRecord], int]:
        """A page of the delivery log, newest first, and the total."""
        return await self._store.unit(
            lambda db: reads.deliveries(
                db, workspace_id, channel_id=channel_id, offset=offset, limit=limit
            )
        )

    async def notifications(
        self,
        workspace_id: str,
        *,
        monitor_id: str | None = None,
        channel_id: str | None = None,
        status: NotificationStatus | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[list[NotificationRecord], int]:
        """A page of the outbox, newest first, and the total."""
        return await self._store.unit(
            lambda db: reads.notifications(
                db,
                workspace_id,
                monitor_id=monitor_id,
                channel_id=channel_id,
                status=status,
                offset=offset,
                limit=limit,
            )
        )

    async def owner_email(self, workspace_id: str) -> str | None:
        """The address of the workspace's owner (its first user); None if it has none."""
        return await self._store.unit(lambda db: reads.owner_email(db, workspace_id))
