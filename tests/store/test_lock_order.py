"""Transactions that lock the same rows take them in the same order, so that on PostgreSQL
they queue instead of deadlocking: a deadlock aborts one of them (the API answered 503
"database is not answering", a poll failed). Each test holds a lock as one side would hold
it midway, lets the other side run until it waits for a lock, then finishes the first side:
in the wrong order the two wait for each other."""

from __future__ import annotations

from decimal import Decimal

import pytest
import trio
from sqlalchemy import create_engine, pool, select, text
from sqlalchemy.orm import Session

from store import MarketSaleRecord, open_store
from store._db.urls import sync_database_url
from store.market.price_book import SaleChange, record_sale_changes
from store.notify.models import NotificationChannel
from tests.store.notify_helpers import add_niche_alerts, new_channel, new_monitor, new_rule
from tests.store.test_notify_dispatch import T0, _alerts


@pytest.mark.postgres
async def test_a_channel_deleted_while_its_batch_is_settled_waits_for_it(
    postgres_url: str,
) -> None:
    """The dispatcher holds the channel (`record_outcome` locks it first, then updates the
    batch's notifications); a delete arriving meanwhile waits for the channel before it
    touches the notifications, so the dispatcher finishes and the delete follows."""
    settler = create_engine(sync_database_url(postgres_url), poolclass=pool.NullPool)
    async with open_store(postgres_url) as store:
        monitor_id, workspace_id = await new_monitor(store)
        channel = await new_channel(store, workspace_id)
        await new_rule(store, workspace_id, ("new_hot_niche",))
        await add_niche_alerts(store, workspace_id, monitor_id, _alerts("a", "b"), now=T0)
        deleted: list[bool] = []

        async def delete() -> None:
            deleted.append(await store.notify.delete_channel(workspace_id, channel.id))

        with Session(settler) as settling, trio.fail_after(60):
            settling.execute(text("SET lock_timeout = '30s'"))  # never hangs the test
            held = select(NotificationChannel.id).where(NotificationChannel.id == channel.id)
            settling.execute(held.with_for_update(key_share=True))  # as record_outcome
            async with trio.open_nursery() as nursery:
                nursery.start_soon(delete)
                while not await trio.to_thread.run_sync(_someone_waits_for_a_lock, settling):
                    await trio.sleep(0.02)
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
    settler.dispose()


@pytest.mark.postgres
async def test_a_channel_deleted_while_a_rule_of_its_workspace_is_deleted_waits_for_it(
    postgres_url: str,
) -> None:
    """A rule's deletion holds the rule, then its alerts lose it (the foreign key's SET
    NULL); a channel's deletion arriving meanwhile waits for the rules before it touches
    the alerts."""
    deleter = create_engine(sync_database_url(postgres_url), poolclass=pool.NullPool)
    async with open_store(postgres_url) as store:
        monitor_id, workspace_id = await new_monitor(store)
        channel = await new_channel(store, workspace_id)
        rule = await new_rule(store, workspace_id, ("new_hot_niche",), channel_ids=(channel.id,))
        await add_niche_alerts(store, workspace_id, monitor_id, _alerts("a", "b"), now=T0)
        deleted: list[bool] = []

        async def delete() -> None:
            deleted.append(await store.notify.delete_channel(workspace_id, channel.id))

        with Session(deleter) as deleting, trio.fail_after(60):
            deleting.execute(text("SET lock_timeout = '30s'"))  # never hangs the test
            held = "SELECT id FROM notification_rules WHERE id = :r FOR UPDATE"
            deleting.execute(text(held), {"r": rule.id})  # as delete_rule, midway
            async with trio.open_nursery() as nursery:
                nursery.start_soon(delete)
                while not await trio.to_thread.run_sync(_someone_waits_for_a_lock, deleting):
                    await trio.sleep(0.02)
                assert not deleted  # the rule is held: the delete cannot be done
                await trio.to_thread.run_sync(_forget_rule_and_commit, deleting, rule.id)
        assert deleted == [True]
    deleter.dispose()


def _forget_rule_and_commit(deleting: Session, rule_id: str) -> None:
    """The rest of the rule's deletion: its alerts keep no rule, then the rule goes."""
    deleting.execute(
        text("UPDATE notifications SET rule_id = NULL WHERE rule_id = :r"), {"r": rule_id}
    )
    deleting.execute(text("DELETE FROM notification_rules WHERE id = :r"), {"r": rule_id})
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
    first = create_engine(sync_database_url(postgres_url), poolclass=pool.NullPool)
    async with open_store(postgres_url) as store:
        with Session(first) as recording, trio.fail_after(60):
            recording.execute(text("SET lock_timeout = '30s'"))  # never hangs the test
            record_sale_changes(recording, [_sale(1)])  # midway: X written, Y to come
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    store.unit, lambda db: record_sale_changes(db, [_sale(2), _sale(1)])
                )
                while not await trio.to_thread.run_sync(_someone_waits_for_a_lock, recording):
                    await trio.sleep(0.02)
                await trio.to_thread.run_sync(_record_and_commit, recording, _sale(2))
        count = "SELECT count(*) FROM market_sales"
        assert await store.unit(lambda db: db.execute(text(count)).scalar_one()) == 2
    first.dispose()


def _record_and_commit(recording: Session, change: SaleChange) -> None:
    record_sale_changes(recording, [change])
    recording.commit()


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
