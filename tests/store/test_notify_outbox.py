"""Alerts written by polls, inside the poll's transaction: new listings, deals against the
niche's sold median in the site's price book, price drops, monitor errors, niche alerts; none
twice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.orm import Session

from engine import decide_error_alerts, decide_poll
from store import ConfirmedState, PollFailure, RuleFilters, Store
from store.monitors import polls
from store.notify.rules import niche_subject
from tests.store.notify_helpers import (
    add_niche_alerts,
    kinds_and_subjects,
    listing,
    new_channel,
    new_monitor,
    new_rule,
    outbox,
    poll,
)

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


async def _bootstrapped(store: Store) -> tuple[str, str]:
    """A monitor whose bootstrap poll saw three jeans that then sold (20, 24 and 30 EUR:
    median 24) and a fourth still open at 30."""
    monitor_id, workspace_id = await new_monitor(store)
    seen = [listing(1, "20"), listing(2, "24"), listing(3, "30"), listing(4, "30")]
    await store.monitors.record_poll(monitor_id, poll(T0, seen), decide=decide_poll)
    sold = [ConfirmedState(i, "sold") for i in (1, 2, 3)]
    await store.monitors.record_poll(
        monitor_id, poll(T0 + timedelta(minutes=1), [], sold), decide=decide_poll
    )
    return monitor_id, workspace_id


async def test_bootstrap_poll_writes_no_listing_alerts(store: Store) -> None:
    monitor_id, workspace_id = await new_monitor(store)
    await new_channel(store, workspace_id)
    await new_rule(store, workspace_id, ("new_listing", "deal", "price_drop"))
    await store.monitors.record_poll(
        monitor_id, poll(T0, [listing(1, "5"), listing(2, "50")]), decide=decide_poll
    )
    assert await outbox(store, workspace_id) == []
    # The next poll's new listing is news.
    await store.monitors.record_poll(
        monitor_id, poll(T0 + timedelta(minutes=1), [listing(3, "9")]), decide=decide_poll
    )
    assert kinds_and_subjects(await outbox(store, workspace_id)) == {("new_listing", "item:3")}


async def test_poll_writes_new_listing_deal_and_price_drop(store: Store) -> None:
    monitor_id, workspace_id = await _bootstrapped(store)
    channel = await new_channel(store, workspace_id)
    rule = await new_rule(store, workspace_id, ("new_listing", "deal", "price_drop"))
    at = T0 + timedelta(minutes=2)
    # 12 <= 0.7 x 24 is a deal; 20 is not; item 4 drops from 30 to 25.
    seen = [listing(10, "12"), listing(11, "20"), listing(4, "25")]
    await store.monitors.record_poll(monitor_id, poll(at, seen), decide=decide_poll)
    notes = await outbox(store, workspace_id)
    assert kinds_and_subjects(notes) == {
        ("new_listing", "item:10"),
        ("new_listing", "item:11"),
        ("deal", "item:10"),
        ("price_drop", "item:4"),
    }
    assert {(n.channel_id, n.rule_id, n.status, n.created_at, n.due_at) for n in notes} == {
        (channel.id, rule.id, "pending", at, at)
    }
    deal = next(n for n in notes if n.kind == "deal")
    assert deal.payload["type"] == "listing.deal" and deal.payload["id"] == deal.id
    assert deal.payload["listing"]["price"] == "12.00"
    assert deal.payload["niche"]["median_sold_price"] == "24.00"
    assert deal.payload["niche"]["sold"] == 3 and deal.payload["niche"]["confidence"] == "low"
    assert deal.payload["figures"]["discount"] == 0.5
    assert "50% under" in deal.payload["reason"]
    new = next(n for n in notes if n.kind == "new_listing" and n.subject == "item:11")
    assert new.payload["reason"].startswith(
        "new at €20.00, 17% under the €24.00 this niche sold for over its last 3 sales (confirmed"
    )
    drop = next(n for n in notes if n.kind == "price_drop")
    assert drop.payload["listing"]["previous_price"] == "30.00"
    assert drop.payload["listing"]["price"] == "25.00"
    # A price rise alerts nobody; the same drop seen again writes nothing new.
    later = at + timedelta(minutes=1)
    await store.monitors.record_poll(
        monitor_id, poll(later, [listing(4, "25"), listing(11, "26")]), decide=decide_poll
    )
    assert len(await outbox(store, workspace_id)) == len(notes)


async def test_a_drop_into_deal_territory_is_a_deal(store: Store) -> None:
    monitor_id, workspace_id = await _bootstrapped(store)
    await new_channel(store, workspace_id)
    await new_rule(store, workspace_id, ("deal",), deal_ratio=0.5)
    await store.monitors.record_poll(
        monitor_id,
        poll(T0 + timedelta(minutes=2), [listing(4, "12")]),
        decide=decide_poll,
    )
    assert kinds_and_subjects(await outbox(store, workspace_id)) == {("deal", "item:4")}


async def test_a_sparse_niche_is_judged_by_its_brand_then_its_category(store: Store) -> None:
    # Three W32 jeans sold at a median of 24; a W34 of the same brand has no sale of its
    # own size, so its price is judged against the brand's sales in the category, and the
    # alert says so. Another brand's W34 has no sale of its brand: its category's sales judge
    # it, and a third one asking more than 70% of them is no deal.
    monitor_id, workspace_id = await _bootstrapped(store)
    await new_channel(store, workspace_id)
    await new_rule(store, workspace_id, ("deal",))
    seen = [
        listing(20, "12", size="W34"),
        listing(21, "5", size="W34", brand="Diesel"),
        listing(22, "17", size="W34", brand="Diesel"),
    ]
    await store.monitors.record_poll(
        monitor_id, poll(T0 + timedelta(minutes=2), seen), decide=decide_poll
    )
    brand, category = await outbox(store, workspace_id)
    assert (brand.subject, category.subject) == ("item:20", "item:21")
    assert brand.payload["niche"]["label"] == "Men › Jeans · Levi's · sizes and conditions mixed"
    assert brand.payload["niche"]["level"] == "brand"
    assert "its brand in this category (all sizes and conditions)" in brand.payload["reason"]
    assert brand.payload["niche"]["median_sold_price"] == "24.00"
    assert category.payload["niche"]["label"] == "Men › Jeans · brands mixed"
    assert category.payload["niche"]["level"] == "category"
    assert "the €24.00 its category (all brands) sold for" in category.payload["reason"]
    assert brand.payload["niche"]["sold"] == 3


async def test_no_deal_without_three_sales(store: Store) -> None:
    monitor_id, workspace_id = await new_monitor(store)
    await store.monitors.record_poll(
        monitor_id, poll(T0, [listing(1, "30"), listing(2, "30")]), decide=decide_poll
    )
    sold = [ConfirmedState(1, "sold"), ConfirmedState(2, "sold")]
    await store.monitors.record_poll(
        monitor_id, poll(T0 + timedelta(minutes=1), [], sold), decide=decide_poll
    )
    await new_channel(store, workspace_id)
    await new_rule(store, workspace_id, ("deal", "new_listing"))
    await store.monitors.record_poll(
        monitor_id, poll(T0 + timedelta(minutes=2), [listing(9, "1")]), decide=decide_poll
    )
    assert kinds_and_subjects(await outbox(store, workspace_id)) == {("new_listing", "item:9")}


async def test_filters_confidence_and_channels_narrow_the_alerts(store: Store) -> None:
    monitor_id, workspace_id = await _bootstrapped(store)
    first = await new_channel(store, workspace_id, "first")
    second = await new_channel(store, workspace_id, "second")
    await new_rule(
        store,
        workspace_id,
        ("new_listing",),
        filters=RuleFilters(brands=("levi's",), exclude_keywords=("stain",)),
        channel_ids=(second.id,),
    )
    await new_rule(
        store, workspace_id, ("new_listing",), filters=RuleFilters(min_confidence="medium")
    )
    seen = [listing(10, "15"), listing(11, "15", brand="Diesel"), listing(12, "15", title="stain")]
    await store.monitors.record_poll(
        monitor_id, poll(T0 + timedelta(minutes=2), seen), decide=decide_poll
    )
    notes = await outbox(store, workspace_id)
    # Only item 10 passes the first rule, only to its one channel; the second rule wants a
    # niche with 5 sales (these have 3 or none).
    assert [(n.subject, n.channel_id) for n in notes] == [("item:10", second.id)]
    assert await outbox(store, workspace_id, channel_id=first.id) == []


async def test_replayed_poll_and_rolled_back_poll_write_nothing_more(store: Store) -> None:
    monitor_id, workspace_id = await _bootstrapped(store)
    await new_channel(store, workspace_id)
    await new_rule(store, workspace_id, ("new_listing", "deal"))
    outcome = poll(T0 + timedelta(minutes=2), [listing(10, "12")])
    await store.monitors.record_poll(monitor_id, outcome, decide=decide_poll)
    await store.monitors.record_poll(
        monitor_id, outcome, decide=decide_poll
    )  # the same poll id, replayed
    assert len(await outbox(store, workspace_id)) == 2

    class Boom(Exception):
        pass

    def poll_then_fail(db: Session) -> None:
        polls.record_poll(
            db, monitor_id, poll(T0 + timedelta(minutes=3), [listing(20, "1")]), decide=decide_poll
        )
        raise Boom

    with pytest.raises(Boom):
        await store.unit(poll_then_fail)
    # The alerts went with the poll's transaction.
    assert len(await outbox(store, workspace_id)) == 2


async def test_monitor_error_once_per_error_episode(store: Store) -> None:
    monitor_id, workspace_id = await new_monitor(store)
    await new_channel(store, workspace_id)
    await new_rule(store, workspace_id, ("monitor_error",))
    await new_rule(store, workspace_id, ("new_listing",))  # wants no errors

    async def fail(poll_id: str) -> None:
        await store.monitors.record_poll_error(
            monitor_id,
            PollFailure(
                poll_id=poll_id,
                started_at=T0,
                error="HTTP 503",
                next_poll_at=T0,
                max_consecutive=2,
                kind="unavailable",
            ),
            decide=decide_error_alerts,
        )

    await fail("p1")
    assert await outbox(store, workspace_id) == []
    await fail("p2")  # the monitor moves to error
    await fail("p2")  # a replay
    await fail("p3")  # still in error
    notes = await outbox(store, workspace_id)
    assert kinds_and_subjects(notes) == {("monitor_error", "error:p2")}
    body = notes[0].payload
    assert body["type"] == "monitor.error" and body["monitor"]["status"] == "error"
    assert body["monitor"]["last_error"] == "HTTP 503"
    assert "did not answer" in body["monitor"]["explanation"]  # the monitor page's words
    # Back to active, then a second episode: a second alert.
    await store.monitors.record_poll(monitor_id, poll(T0, [listing(1, "5")]), decide=decide_poll)
    await fail("p4")
    await fail("p5")
    assert kinds_and_subjects(await outbox(store, workspace_id)) == {
        ("monitor_error", "error:p2"),
        ("monitor_error", "error:p5"),
    }


async def test_quiet_hours_and_digest_push_due_at(store: Store) -> None:
    monitor_id, workspace_id = await _bootstrapped(store)
    await new_channel(store, workspace_id)
    # 12:02 UTC is 13:02 in Paris, inside 12:00-18:00 quiet hours: due 18:00 Paris = 17:00 UTC.
    await new_rule(
        store, workspace_id, ("new_listing",), quiet_start="12:00", quiet_end="18:00",
        timezone="Europe/Paris",
    )  # fmt: skip
    # A 9:00 digest in Tokyo (UTC+9): next is 00:00 UTC tomorrow.
    await new_rule(
        store, workspace_id, ("deal",), mode="digest", digest_hour=9, timezone="Asia/Tokyo"
    )
    await store.monitors.record_poll(
        monitor_id,
        poll(T0 + timedelta(minutes=2), [listing(10, "1")]),
        decide=decide_poll,
    )
    due = {n.kind: n.due_at for n in await outbox(store, workspace_id)}
    assert due == {
        "new_listing": datetime(2026, 11, 26, 17, 0, tzinfo=UTC),
        "deal": datetime(2026, 11, 27, 0, 0, tzinfo=UTC),
    }


async def test_niche_alerts_are_idempotent_and_filtered(store: Store) -> None:
    monitor_id, workspace_id = await new_monitor(store)
    await new_channel(store, workspace_id)
    await new_rule(store, workspace_id, ("new_hot_niche",), filters=RuleFilters(brands=("Levi's",)))
    # Wants 20 sales: these niches have 8.
    await new_rule(
        store, workspace_id, ("new_hot_niche",), filters=RuleFilters(min_confidence="high")
    )
    alerts = [  # as the analysis writes them (`Alert.to_json()`)
        {
            "kind": "new_hot_niche",
            "niche": {"level": "exact", "category_id": 5, "brand": brand, "size": "W32",
                      "condition": "Very good", "label": f"Men › Jeans · {brand}"},
            "item_id": None,
            "reason": "newly hot",
            "figures": {"sold_recent": 8, "trials_recent": 10},
        }
        for brand in ("Levi's", "Diesel")
    ]  # fmt: skip
    assert await add_niche_alerts(store, workspace_id, monitor_id, alerts) == 1
    assert await add_niche_alerts(store, workspace_id, monitor_id, alerts) == 0
    notes = await outbox(store, workspace_id)
    assert len(notes) == 1 and notes[0].payload["type"] == "niche.new_hot"
    assert notes[0].subject == niche_subject(5, "Levi's", "W32", "Very good")
    assert notes[0].payload["niche"]["brand"] == "Levi's" and "listing" not in notes[0].payload
    # Another workspace cannot queue alerts for this monitor.
    _, other = await new_monitor(store)
    assert await add_niche_alerts(store, other, monitor_id, alerts) == 0
