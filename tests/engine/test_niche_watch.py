"""Niche alerts from a monitor's history: a brand that starts selling much faster than the
rest of the market, in the second half of a month, is pushed as a newly hot niche once, and
not again at the next look; a monitor whose rules want no niche alert costs no analysis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine import decide_poll
from engine._niche_watch import NicheWatch
from store import ConfirmedState, Store
from tests.store.notify_helpers import listing, new_channel, new_monitor, new_rule, outbox, poll

T0 = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
BRANDS = ("Levi's", "Diesel", "Lee", "Wrangler")


async def _month_where_levis_heats_up(store: Store, monitor_id: str) -> None:
    """Four brands of jeans, six fresh listings of each a day; for 15 days each brand sells
    one a day, then Levi's sells five a day while the others sell one every third day."""
    next_id, open_ids = 1, {b: [] for b in BRANDS}  # type: dict[str, list[int]]
    for day in range(30):
        at = T0 + timedelta(days=day)
        seen = []
        for brand in BRANDS:
            for _ in range(6):
                seen.append(listing(next_id, "30", brand=brand))
                open_ids[brand].append(next_id)
                next_id += 1
        sold = []
        for brand in BRANDS:
            hot = day >= 15 and brand == "Levi's"
            count = 5 if hot else (1 if day < 15 or day % 3 == 0 else 0)
            for item in open_ids[brand][:count]:
                sold.append(ConfirmedState(item, "sold", "item_page"))
            del open_ids[brand][:count]
        await store.monitors.record_poll(monitor_id, poll(at, seen, sold), decide=decide_poll)


async def test_a_niche_heating_up_is_pushed_once(store: Store) -> None:
    monitor_id, workspace_id = await new_monitor(store)
    await _month_where_levis_heats_up(store, monitor_id)
    await new_channel(store, workspace_id)
    await new_rule(store, workspace_id, ("new_hot_niche", "sell_through_jump"))
    watch = NicheWatch(store, every=timedelta(0))
    monitor = await store.monitors.get(monitor_id, workspace_id)
    assert monitor is not None
    assert await watch.after_poll(monitor) >= 1
    notes = await outbox(store, workspace_id)
    assert notes and {n.payload["niche"]["brand"] for n in notes} == {"Levi's"}
    assert {n.kind for n in notes} <= {"new_hot_niche", "sell_through_jump"}
    hot = [n for n in notes if n.kind == "new_hot_niche"]
    assert hot and hot[0].payload["type"] == "niche.new_hot"
    assert "newly hot" in hot[0].payload["reason"]
    # The same finding at the next look is not news.
    assert await watch.after_poll(monitor) == 0
    assert len(await outbox(store, workspace_id)) == len(notes)


async def test_no_analysis_for_rules_that_want_no_niche_alert(store: Store) -> None:
    monitor_id, workspace_id = await new_monitor(store)
    await _month_where_levis_heats_up(store, monitor_id)
    await new_channel(store, workspace_id)
    await new_rule(store, workspace_id, ("new_listing",))
    analysed: list[object] = []

    def analyse(evidence: object) -> dict[str, object]:
        analysed.append(evidence)
        return {"alerts": []}

    monitor = await store.monitors.get(monitor_id, workspace_id)
    assert monitor is not None
    assert await NicheWatch(store, every=timedelta(0), analyse=analyse).after_poll(monitor) == 0
    assert analysed == []
