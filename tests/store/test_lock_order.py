"""Transactions that lock the same rows take them in the same order, so that on PostgreSQL
they queue instead of deadlocking: a deadlock aborts one of them (the API answered 503
"database is not answering", a poll failed). Each test holds a lock as one side would hold
it midway, lets the other side run until it waits for a lock, then finishes the first side:
in the wrong order the two wait for each other."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from decimal import Decimal

import pytest
import trio
from sqlalchemy import create_engine, pool, select, text
from sqlalchemy.orm import Session

from store import MarketSaleRecord, NewChannel, NewRule, open_store
from store._db.urls import sync_database_url
from store.accounts.confirmations import NewConfirmation, add_confirmation, use_confirmation
from store.market.price_book import SaleChange, record_sale_changes
from store.monitors.models import Monitor
from store.notify import outbox
from store.notify.models import Notification, NotificationChannel
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

        with _holding(postgres_url) as settling, trio.fail_after(60):
            held = select(NotificationChannel.id).where(NotificationChannel.id == channel.id)
            settling.execute(held.with_for_update(key_share=True))  # as record_outcome
            async with _beside(settling) as nursery:
                nursery.start_soon(delete)
                await _until_waiting(settling)
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

        with _holding(postgres_url) as deleting, trio.fail_after(60):
            held = "SELECT id FROM notification_rules WHERE id = :r FOR UPDATE"
            deleting.execute(text(held), {"r": rule.id})  # as delete_rule, midway
            async with _beside(deleting) as nursery:
                nursery.start_soon(delete)
                await _until_waiting(deleting)
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

        with _holding(postgres_url) as polling, trio.fail_after(60):
            monitor = polling.get(Monitor, monitor_id)
            assert monitor is not None
            rules, channels = outbox._targets(polling, monitor)  # the poll, midway
            assert [r.id for r in rules] == [rule.id] and channels == [channel.id]
            async with _beside(polling) as nursery:
                nursery.start_soon(delete)
                await _until_waiting(polling, unless=deleted)
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

        with _holding(postgres_url) as polling, trio.fail_after(60):
            fenced = "SELECT lease_token FROM monitors WHERE id = :m FOR UPDATE"
            polling.execute(text(fenced), {"m": monitor_id})  # as `fence`
            async with _beside(polling) as nursery:
                nursery.start_soon(replace_rules)
                await _until_waiting(polling)
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

        with _holding(postgres_url) as deleting, trio.fail_after(60):
            held = "SELECT id FROM notification_channels WHERE id = :c FOR UPDATE"
            deleting.execute(text(held), {"c": channel.id})  # as delete_channel, first
            async with _beside(deleting) as nursery:
                nursery.start_soon(open_link)
                await _until_waiting(deleting, unless=opened)
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
        with _holding(postgres_url) as recording, trio.fail_after(60):
            record_sale_changes(recording, [_sale(1)])  # midway: X written, Y to come
            async with _beside(recording) as nursery:
                nursery.start_soon(
                    store.unit, lambda db: record_sale_changes(db, [_sale(2), _sale(1)])
                )
                await _until_waiting(recording)
                await trio.to_thread.run_sync(_record_and_commit, recording, _sale(2))
        count = "SELECT count(*) FROM market_sales"
        assert await store.unit(lambda db: db.execute(text(count)).scalar_one()) == 2


def _record_and_commit(recording: Session, change: SaleChange) -> None:
    record_sale_changes(recording, [change])
    recording.commit()


@contextmanager
def _holding(postgres_url: str) -> Iterator[Session]:
    """A transaction of its own beside the store's, as the side that holds a lock midway;
    it never waits more than 30 s for one (no test hangs)."""
    engine = create_engine(sync_database_url(postgres_url), poolclass=pool.NullPool)
    try:
        with Session(engine) as session:
            session.execute(text("SET lock_timeout = '30s'"))
            yield session
    finally:
        engine.dispose()


async def _until_waiting(holding: Session, unless: Sequence[object] = ()) -> None:
    """Until the other side waits for a lock; or, taken in the wrong order, was done
    without waiting (`unless` holds its result)."""
    while not unless and not await trio.to_thread.run_sync(_someone_waits_for_a_lock, holding):
        await trio.sleep(0.02)


@asynccontextmanager
async def _beside(holding: Session) -> AsyncIterator[trio.Nursery]:
    """A nursery for the other side. If the body fails (or times out), `holding` lets go of
    its locks before the nursery waits for the other side, which may be waiting for them
    in a worker thread that nothing can cancel."""
    async with trio.open_nursery() as nursery:
        try:
            yield nursery
        except BaseException:
            holding.rollback()
            raise


def _someone_waits_for_a_lock(beside: Session) -> bool:
    with Session(beside.get_bind()) as looking:
        waiting = looking.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        ).scalar_one()
    return int(waiting) > 0


def _settle_and_commit(settling: Session, channel_id: str) -> None:
    settling.execute(
        text("UPDATE notifications SET attempts = attempts + 1 WHERE channel_id = :c"),
        {"c": channel_id},
    )
    settling.commit()
