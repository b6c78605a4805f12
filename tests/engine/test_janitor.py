"""Housekeeping (`engine/_janitor.py`): expired sessions and long-expired links go, live ones
stay; descriptions no monitor holds go, held ones stay; the engine runs it on its own."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import text
from sqlalchemy.orm import Session

from engine import EngineSettings, JanitorSettings, open_engine
from engine._janitor import Janitor
from store import DELIVERY_LOG_KEPT, ChannelRecord, NewTrialToken, NewUser, Store
from store.accounts.confirmations import NewConfirmation, add_confirmation, use_confirmation
from store.accounts.expiry import LINK_GRACE
from store.notify.models import NotificationDelivery
from store.notify.retention import drop_old_deliveries
from tests.conftest import new_monitor
from tests.engine.fake_market import FakeMarket
from tests.store.notify_helpers import new_channel
from tests.store.test_site_listings import FR, _poll, _seen
from tests.waiting import eventually


async def _user(store: Store) -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:12]
    user = await store.create_user(NewUser(
        user_id=f"usr_{suffix}", workspace_id=f"ws_{suffix}", email=f"{suffix}@example.com",
        name=None, password_hash="h",
    ))  # fmt: skip
    return user.id, user.workspace_id


async def test_expired_sessions_and_long_expired_links_go(store: Store) -> None:
    user_id, workspace_id = await _user(store)
    now = store.clock()
    lately, long_ago = now - timedelta(hours=1), now - LINK_GRACE - timedelta(hours=1)
    for name, expires_at in (("live", now + timedelta(days=1)), ("dead", lately)):
        await store.add_session(token_hash=name + user_id, user_id=user_id, expires_at=expires_at)
    for name, expires_at in (("recent", lately), ("old", long_ago)):
        await store.add_password_reset(
            token_hash=name + user_id, user_id=user_id, expires_at=expires_at
        )
        # A person's newer link ends their older ones: each link its own person.
        link = NewConfirmation(
            token_hash=name + user_id, purpose="account", email="a@example.com",
            expires_at=expires_at, user_id=(await _user(store))[0],
        )  # fmt: skip
        await store.unit(lambda db, link=link: add_confirmation(db, link, now))
        await store.billing.add_trial_token(NewTrialToken(
            token_hash=name + user_id, workspace_id=workspace_id, user_id=user_id,
            email="a@example.com", expires_at=expires_at,
        ))  # fmt: skip

    tidied = await Janitor(store, JanitorSettings()).tidy()

    assert tidied == {
        "sessions": 1, "password_resets": 1, "email_confirmations": 1, "trial_links": 1,
        "unheld_descriptions": 0, "old_deliveries": 0,
    }  # fmt: skip
    assert await store.find_session("live" + user_id) is not None
    # A link expired lately still says so; the one long expired is now unknown.
    recent = await store.unit(lambda db: use_confirmation(db, "recent" + user_id, "account", now))
    old = await store.unit(lambda db: use_confirmation(db, "old" + user_id, "account", now))
    assert (recent.outcome, old.outcome) == ("expired_token", "unknown_token")


async def test_descriptions_no_monitor_holds_are_swept(store: Store) -> None:
    monitor = await new_monitor(store, url=FR)
    await _poll(store, monitor.id, [_seen(1, "Jeans"), _seen(2, "Jacket"), _seen(3, "Cap")], 0)
    # Left behind as if the poll's drop had failed: no monitor holds item 2's version now.
    await store.unit(lambda db: db.execute(text("DELETE FROM monitor_listings WHERE item_id = 2")))

    tidied = await Janitor(store, JanitorSettings()).tidy()

    assert tidied["unheld_descriptions"] == 1
    items = "SELECT item_id FROM site_listings ORDER BY item_id"
    assert await store.unit(lambda db: list(db.execute(text(items)).scalars())) == [1, 3]


async def test_the_engine_keeps_house_on_its_own(store: Store) -> None:
    user_id, _ = await _user(store)
    dead = store.clock() - timedelta(hours=1)
    await store.add_session(token_hash="dead" + user_id, user_id=user_id, expires_at=dead)
    settings = EngineSettings(housekeeping=JanitorSettings(first_after_seconds=0))
    async with open_engine(store, FakeMarket(), settings) as engine:
        await eventually(lambda: engine.janitor.board.rounds >= 1, what="a housekeeping round")
        assert engine.janitor.board.snapshot()["last_removed"] == {
            "sessions": 1, "password_resets": 0, "email_confirmations": 0, "trial_links": 0,
            "unheld_descriptions": 0, "old_deliveries": 0,
        }  # fmt: skip

    def sessions(db: Session) -> int:
        return int(db.execute(text("SELECT count(*) FROM sessions")).scalar_one())

    assert await store.unit(sessions) == 0


async def _log(store: Store, channel: ChannelRecord, ages_in_days: list[float]) -> list[int]:
    """Delivery log rows written in this order, attempted that many days ago; their ids."""
    now = store.clock()

    def write(db: Session) -> list[int]:
        rows = [
            NotificationDelivery(
                workspace_id=channel.workspace_id, channel_id=channel.id,
                attempted_at=now - timedelta(days=age), notification_ids=[], ok=True,
                status_code=200, latency_ms=5, error=None, test=False,
            )
            for age in ages_in_days
        ]  # fmt: skip
        db.add_all(rows)
        db.flush()
        return [row.id for row in rows]

    return await store.unit(write)


async def test_the_delivery_log_keeps_ninety_days(store: Store) -> None:
    _, workspace_id = await _user(store)
    channel = await new_channel(store, workspace_id)
    kept_days = DELIVERY_LOG_KEPT.days
    # Oldest first, as attempts are written; one written out of order (another node's clock
    # behind) waits behind the young row before it.
    ids = await _log(
        store, channel, [kept_days + 30, kept_days + 1, kept_days - 1, kept_days + 2, 1, 0]
    )

    tidied = await Janitor(store, JanitorSettings()).tidy()

    assert tidied["old_deliveries"] == 2
    page, total = await store.notify.deliveries(workspace_id)
    assert total == 4 and {d.id for d in page} == set(ids[2:])
    # Nothing left to drop: a round stops at the first young row.
    assert (await Janitor(store, JanitorSettings()).tidy())["old_deliveries"] == 0


async def test_the_delivery_log_is_dropped_a_batch_at_a_time(store: Store) -> None:
    _, workspace_id = await _user(store)
    channel = await new_channel(store, workspace_id)
    await _log(store, channel, [DELIVERY_LOG_KEPT.days + 10] * 7 + [0.5])
    before = store.clock() - DELIVERY_LOG_KEPT
    steps, after = [], 0

    def step(db: Session) -> tuple[int, int] | None:
        return drop_old_deliveries(db, before, after, limit=3)

    while (done := await store.unit(step)) is not None:
        after, gone = done
        steps.append(gone)
    assert steps == [3, 3, 1]
    assert (await store.notify.deliveries(workspace_id))[1] == 1


async def test_a_step_starts_where_the_last_one_ended(store: Store) -> None:
    _, workspace_id = await _user(store)
    channel = await new_channel(store, workspace_id)
    ids = await _log(store, channel, [DELIVERY_LOG_KEPT.days + 10] * 4)
    before = store.clock() - DELIVERY_LOG_KEPT

    step = await store.unit(lambda db: drop_old_deliveries(db, before, ids[1], limit=10))

    assert step == (ids[3], 2)
    page, _ = await store.notify.deliveries(workspace_id)
    assert sorted(d.id for d in page) == ids[:2]  # below `after`: not walked, not deleted
