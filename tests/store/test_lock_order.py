"""Transactions that lock the same rows take them in the same order, so that on PostgreSQL
they queue instead of deadlocking: a deadlock aborts one of them (the API answered 503
"database is not answering", a poll failed). Each test holds a lock as one side would hold
it midway, lets the other side run until it waits for a lock, then finishes the first side:
in the wrong order the two wait for each other."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
import trio
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from store import DeliveryOutcome, MarketSaleRecord, NewChannel, NewRule, Store, open_store
from store.accounts.confirmations import NewConfirmation, add_confirmation, use_confirmation
from store.market.price_book import SaleChange, record_sale_changes
from store.monitors.models import Monitor
from store.notify import outbox
from store.notify.models import Notification, NotificationChannel
from tests.store.holding import beside, holding, until_waiting
from tests.store.notify_helpers import add_niche_alerts, new_channel, new_monitor, new_rule
from tests.store.test_notify_dispatch import T0, _alerts


@pytest.mark.postgres
async def test_a_channel_deleted_while_its_batch_is_settled_waits_for_it(
    postgres_url: str,
) -> None:
    """The dispatcher holds the channel (`record_outcome` locks it first, then updates the
    batch's notifications); a delete arriving meanwhile waits for the channel before it
    touches the notifications, so the dispatcher finishes and the delete follows."""
    async with open_store(postgres_url) as store:
        monitor_id, workspace_id = await new_monitor(store)
        channel = await new_channel(store, workspace_id)
        await new_rule(store, workspace_id, ("new_hot_niche",))
        await add_niche_alerts(store, workspace_id, monitor_id, _alerts("a", "b"), now=T0)
        deleted: list[bool] = []

        async def delete() -> None:
            deleted.append(await store.notify.delete_channel(workspace_id, channel.id))

        with holding(postgres_url) as settling, trio.fail_after(60):
            held = select(NotificationChannel.id).where(NotificationChannel.id == channel.id)
            settling.execute(held.with_for_update(key_share=True))  # as record_outcome
            async with beside(settling) as nursery:
                nursery.start_soon(delete)
                await until_waiting(settling)
                # The batch settled while the delete waits: with the channel locked last,
                # the delete would hold these rows and this update would wait for it.
                await trio.to_thread.run_sync(_settle_and_commit, settling, channel.id)
        assert deleted == [True]
        left = await store.unit(
            lambda db: db.execute(
                text("SELECT count(*) FROM notifications WHERE channel_id = :c"), {"c": channel.id}
            ).scalar_one()
        )
        assert left == 0


@pytest.mark.postgres
async def test_a_channel_deleted_while_a_rule_of_its_workspace_is_deleted_waits_for_it(
    postgres_url: str,
) -> None:
    """A rule's deletion holds the rule, then its alerts lose it (the foreign key's SET
    NULL); a channel's deletion arriving meanwhile waits for the rules before it touches
    the alerts."""
    async with open_store(postgres_url) as store:
        monitor_id, workspace_id = await new_monitor(store)
        channel = await new_channel(store, workspace_id)
        rule = await new_rule(store, workspace_id, ("new_hot_niche",), channel_ids=(channel.id,))
        await add_niche_alerts(store, workspace_id, monitor_id, _alerts("a", "b"), now=T0)
        deleted: list[bool] = []

        async def delete() -> None:
            deleted.append(await store.notify.delete_channel(workspace_id, channel.id))

        with holding(postgres_url) as deleting, trio.fail_after(60):
            held = "SELECT id FROM notification_rules WHERE id = :r FOR UPDATE"
            deleting.execute(text(held), {"r": rule.id})  # as delete_rule, midway
            async with beside(deleting) as nursery:
                nursery.start_soon(delete)
                await until_waiting(deleting)
                assert not deleted  # the rule is held: the delete cannot be done
                await trio.to_thread.run_sync(_forget_rule_and_commit, deleting, rule.id)
        assert deleted == [True]


def _forget_rule_and_commit(deleting: Session, rule_id: str) -> None:
    """The rest of the rule's deletion: its alerts keep no rule, then the rule goes."""
    deleting.execute(
        text("UPDATE notifications SET rule_id = NULL WHERE rule_id = :r"), {"r": rule_id}
    )
    deleting.execute(text("DELETE FROM notification_rules WHERE id = :r"), {"r": rule_id})
    deleting.commit()


@pytest.mark.postgres
async def test_a_rule_deleted_while_a_poll_queues_its_alerts_waits_for_the_poll(
    postgres_url: str,
) -> None:
    """A poll has read the rules and channels its alerts will name (`outbox._targets`);
    the rule's deletion arriving before the alerts are inserted waits for the poll, instead
    of committing first and failing the poll's insert on the foreign key."""
    async with open_store(postgres_url) as store:
        monitor_id, workspace_id = await new_monitor(store)
        channel = await new_channel(store, workspace_id)
        rule = await new_rule(store, workspace_id, ("new_listing",))
        deleted: list[bool] = []

        async def delete() -> None:
            deleted.append(await store.notify.delete_rule(workspace_id, rule.id))

        with holding(postgres_url) as polling, trio.fail_after(60):
            monitor = polling.get(Monitor, monitor_id)
            assert monitor is not None
            rules, channels = outbox._targets(polling, monitor)  # the poll, midway
            assert [r.id for r in rules] == [rule.id] and channels == [channel.id]
            async with beside(polling) as nursery:
                nursery.start_soon(delete)
                await until_waiting(polling, unless=deleted)
                await trio.to_thread.run_sync(_queue_and_commit, polling, monitor, rule.id)
        assert deleted == [True]
        kept = "SELECT count(*) FROM notifications WHERE rule_id IS NULL"
        assert await store.unit(lambda db: db.execute(text(kept)).scalar_one()) == 1


@pytest.mark.postgres
async def test_a_monitors_rules_replaced_during_its_fenced_poll_wait_for_the_poll(
    postgres_url: str,
) -> None:
    """Cluster mode: a poll holds its monitor from its start (the lease's fence), then the
    rules its alerts name. Replacing the monitor's rules meanwhile waits for the monitor
    before it deletes any rule, instead of deleting them and then waiting for the monitor
    while the poll waits for the deleted rules."""
    async with open_store(postgres_url) as store:
        monitor_id, workspace_id = await new_monitor(store)
        await new_channel(store, workspace_id)
        [own] = await store.notify.set_monitor_rules(
            workspace_id, monitor_id, [NewRule(name="mine", kinds=("new_listing",))]
        )
        replaced: list[int] = []

        async def replace_rules() -> None:
            new = [NewRule(name="mine, again", kinds=("new_listing",))]
            replaced.append(
                len(await store.notify.set_monitor_rules(workspace_id, monitor_id, new))
            )

        with holding(postgres_url) as polling, trio.fail_after(60):
            fenced = "SELECT lease_token FROM monitors WHERE id = :m FOR UPDATE"
            polling.execute(text(fenced), {"m": monitor_id})  # as `fence`
            async with beside(polling) as nursery:
                nursery.start_soon(replace_rules)
                await until_waiting(polling)
                monitor = polling.get(Monitor, monitor_id)
                assert monitor is not None
                rules, _ = outbox._targets(polling, monitor)
                assert [r.id for r in rules] == [own.id]
                await trio.to_thread.run_sync(_queue_and_commit, polling, monitor, own.id)
        assert replaced == [1]


def _queue_and_commit(polling: Session, monitor: Monitor, rule_id: str) -> None:
    """The rest of the poll: one alert for the rule on the workspace's channel."""
    (channel_id,) = polling.execute(
        text("SELECT id FROM notification_channels WHERE workspace_id = :w"),
        {"w": monitor.workspace_id},
    ).scalars()
    polling.add(Notification(
        id=f"ntf_{monitor.id[-12:]}", workspace_id=monitor.workspace_id, monitor_id=monitor.id,
        rule_id=rule_id, channel_id=channel_id, kind="new_listing", subject="item:1",
        payload="{}", created_at=T0, due_at=T0, status="pending", attempts=0,
        next_attempt_at=T0,
    ))  # fmt: skip
    polling.commit()


@pytest.mark.postgres
async def test_a_channels_link_opened_while_the_channel_is_deleted_waits_for_it(
    postgres_url: str,
) -> None:
    """The recipient opens the channel's confirmation link while its owner deletes the
    channel (which holds the channel first, then its links go with it): spending the link
    waits for the channel, and then finds no link."""
    async with open_store(postgres_url) as store:
        _, workspace_id = await new_monitor(store)
        channel = await store.notify.add_channel(NewChannel(
            workspace_id=workspace_id, kind="email", name="inbox", hint="b***@example.com",
            secret_box="sealed", awaiting_confirmation=True,
        ))  # fmt: skip
        link = NewConfirmation(
            token_hash="a" * 64, purpose="channel", email="bob@example.com",
            expires_at=T0 + timedelta(days=1), channel_id=channel.id,
        )  # fmt: skip
        await store.unit(lambda db: add_confirmation(db, link, T0))
        opened: list[str] = []

        async def open_link() -> None:
            spend = lambda db: use_confirmation(db, link.token_hash, "channel", T0)  # noqa: E731
            opened.append((await store.unit(spend)).outcome)

        with holding(postgres_url) as deleting, trio.fail_after(60):
            held = "SELECT id FROM notification_channels WHERE id = :c FOR UPDATE"
            deleting.execute(text(held), {"c": channel.id})  # as delete_channel, first
            async with beside(deleting) as nursery:
                nursery.start_soon(open_link)
                await until_waiting(deleting, unless=opened)
                await trio.to_thread.run_sync(_delete_channel_and_commit, deleting, channel.id)
        assert opened == ["unknown_token"]


def _delete_channel_and_commit(deleting: Session, channel_id: str) -> None:
    """The rest of the channel's deletion: its links go with it (the foreign key's cascade)."""
    deleting.execute(text("DELETE FROM notification_channels WHERE id = :c"), {"c": channel_id})
    deleting.commit()


SITE = "https://www.vinted.fr"


def _sale(item_id: int) -> SaleChange:
    return SaleChange(SITE, item_id, MarketSaleRecord(
        site=SITE, item_id=item_id, category_id=5, category_name="Jeans", brand="Levi's",
        size="W32", condition="Very good", price=Decimal("20"), currency="EUR",
        days_to_sell=1.0, evidence="likely", sold_at=T0,
    ))  # fmt: skip


@pytest.mark.postgres
async def test_two_polls_recording_the_same_sales_in_opposite_orders_queue(
    postgres_url: str,
) -> None:
    """Two monitors of one site record sales X and Y in the orders their steps came in:
    one has written X and goes on to Y while the other records Y then X. The price book
    takes its rows in (site, item id) order, whatever the order given."""
    async with open_store(postgres_url) as store:
        with holding(postgres_url) as recording, trio.fail_after(60):
            record_sale_changes(recording, [_sale(1)])  # midway: X written, Y to come
            async with beside(recording) as nursery:
                nursery.start_soon(
                    store.unit, lambda db: record_sale_changes(db, [_sale(2), _sale(1)])
                )
                await until_waiting(recording)
                await trio.to_thread.run_sync(_record_and_commit, recording, _sale(2))
        count = "SELECT count(*) FROM market_sales"
        assert await store.unit(lambda db: db.execute(text(count)).scalar_one()) == 2


def _record_and_commit(recording: Session, change: SaleChange) -> None:
    record_sale_changes(recording, [change])
    recording.commit()


def _settle_and_commit(settling: Session, channel_id: str) -> None:
    settling.execute(
        text("UPDATE notifications SET attempts = attempts + 1 WHERE channel_id = :c"),
        {"c": channel_id},
    )
    settling.commit()


# Two alerts of one monitor, rule and channel. "ntf_b" is written first, so a plan that reads
# the table (or the monitor's index) in its physical order takes it before "ntf_a"; a rule's
# index (rule, channel, kind, subject) reaches it first too. Taken in id order, "ntf_a" is
# first: holding it, one side keeps the other from taking either.
_ALERTS = (("ntf_b", "item:1"), ("ntf_a", "item:2"))


async def _two_alerts(store: Store) -> tuple[str, str, str, str]:
    """(workspace, monitor, channel, rule) with the two `_ALERTS` pending."""
    monitor_id, workspace_id = await new_monitor(store)
    channel = await new_channel(store, workspace_id)
    rule = await new_rule(store, workspace_id, ("new_listing",), monitor_id=monitor_id)

    def write(db: Session) -> None:
        for alert_id, subject in _ALERTS:
            db.add(Notification(
                id=alert_id, workspace_id=workspace_id, monitor_id=monitor_id, rule_id=rule.id,
                channel_id=channel.id, kind="new_listing", subject=subject, payload="{}",
                created_at=T0, due_at=T0, status="pending", attempts=0, next_attempt_at=T0,
            ))  # fmt: skip
            db.flush()

    await store.unit(write)
    return workspace_id, monitor_id, channel.id, rule.id


def _delivered(channel_id: str) -> DeliveryOutcome:
    ids = tuple(alert_id for alert_id, _ in _ALERTS)
    return DeliveryOutcome(
        channel_id=channel_id, notification_ids=ids, ok=True, status_code=200, latency_ms=5,
        error=None, retry_at=None,
    )  # fmt: skip


@pytest.mark.postgres
async def test_a_batch_settled_while_its_monitor_is_deleted_waits_for_the_delete(
    postgres_url: str,
) -> None:
    """The monitor's deletion holds the monitor, its rules and the first of its alerts (in
    id order) when the dispatcher records the batch it delivered: the dispatcher waits for
    the first alert instead of taking the second first, so the delete's cascade finishes
    and the dispatcher finds the batch gone."""
    async with open_store(postgres_url) as store:
        workspace_id, monitor_id, channel_id, _ = await _two_alerts(store)
        recorded: list[object] = []

        async def record() -> None:
            outcome = _delivered(channel_id)
            recorded.append(await store.notify.record_outcome(outcome, node_id="n1", now=T0))

        with holding(postgres_url) as deleting, trio.fail_after(60):
            for held in (
                "SELECT id FROM monitors WHERE id = :m FOR UPDATE",
                "SELECT id FROM notification_rules WHERE monitor_id = :m FOR UPDATE",
                "SELECT id FROM notifications WHERE id = 'ntf_a' FOR UPDATE",
            ):
                deleting.execute(text(held), {"m": monitor_id})  # as delete_monitor, midway
            async with beside(deleting) as nursery:
                nursery.start_soon(record)
                await until_waiting(deleting, unless=recorded)
                await trio.to_thread.run_sync(_delete_monitor_and_commit, deleting, monitor_id)
        assert recorded == [None]
        _, logged = await store.notify.deliveries(workspace_id)
        assert logged == 1  # the attempt is in the log, though its alerts are gone


def _delete_monitor_and_commit(deleting: Session, monitor_id: str) -> None:
    """The rest of the monitor's deletion: its rules and alerts go by the cascade."""
    deleting.execute(text("DELETE FROM monitors WHERE id = :m"), {"m": monitor_id})
    deleting.commit()


@pytest.mark.postgres
@pytest.mark.parametrize("deleted", ["monitor", "rule", "monitor's rules"])
async def test_a_delete_while_a_batch_is_settled_waits_for_the_dispatcher(
    postgres_url: str, deleted: str
) -> None:
    """The dispatcher holds the channel and the first of the batch's alerts (in id order)
    when their monitor or rule is deleted: the delete's cascade would take the second
    alert first; it waits for the first instead, so the dispatcher settles the batch and
    the delete follows."""
    async with open_store(postgres_url) as store:
        workspace_id, monitor_id, channel_id, rule_id = await _two_alerts(store)
        done: list[object] = []

        async def delete() -> None:
            if deleted == "monitor":
                done.append(await store.monitors.delete(monitor_id, workspace_id))
            elif deleted == "rule":
                done.append(await store.notify.delete_rule(workspace_id, rule_id))
            else:
                done.append(await store.notify.set_monitor_rules(workspace_id, monitor_id, []))

        with holding(postgres_url) as settling, trio.fail_after(60):
            held = select(NotificationChannel.id).where(NotificationChannel.id == channel_id)
            settling.execute(held.with_for_update(key_share=True))  # as record_outcome
            first = "SELECT id FROM notifications WHERE id = 'ntf_a' FOR NO KEY UPDATE"
            settling.execute(text(first))
            async with beside(settling) as nursery:
                nursery.start_soon(delete)
                await until_waiting(settling, unless=done)
                await trio.to_thread.run_sync(_settle_and_commit, settling, channel_id)
        assert done in ([True], [[]])
        settled = "SELECT count(*) FROM notifications WHERE attempts = 1"
        assert await store.unit(lambda db: db.execute(text(settled)).scalar_one()) == (
            0 if deleted == "monitor" else 2
        )
