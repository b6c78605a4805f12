"""A brand-new monitor's first poll after its bootstrap already knows what a listing is worth:
the site's price book holds the sales another workspace's monitor recorded, so a cheap new
listing is a deal at once, and its reason quotes the book. Real store, polls straight through
`poll_once`, an in-memory marketplace."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import jsonschema

from api.notifications.webhook_docs import SCHEMAS, event_schema
from engine.monitors._poll import poll_once
from store import MonitorRecord, Store
from tests.conftest import new_monitor
from tests.store.notify_helpers import new_channel, new_rule, outbox

from .fake_market import FakeMarket

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
URL = "https://www.vinted.fr/catalog?brand_ids[]=53"
JEANS = {"category_id": 5, "size": "W32", "condition": "Very good", "currency": "EUR"}


class Clock:
    def __init__(self) -> None:
        self.minute = 0

    def __call__(self) -> datetime:
        self.minute += 1
        return NOW + timedelta(minutes=self.minute)


async def test_a_new_monitors_first_poll_finds_a_deal_in_the_sites_book(store: Store) -> None:
    market, clock = FakeMarket(), Clock()
    for item_id, price in ((1, "40.00"), (2, "42.00"), (3, "44.00"), (4, "60.00")):
        market.list(item_id, price)
        market.fields[item_id] = JEANS | {"title": f"Levi's 501 #{item_id}"}

    async def poll(monitor: MonitorRecord) -> None:
        await poll_once(store, market, monitor, now=clock())

    # Another workspace's monitor watched three of them sell (confirmed by their pages).
    veteran = await new_monitor(store, url=URL)
    await poll(veteran)
    for item_id in (1, 2, 3):
        market.states[item_id] = "sold"
    await poll(veteran)
    # A new workspace starts a monitor of the same search, with a deal rule.
    newcomer = await new_monitor(store, url=URL)
    await new_channel(store, newcomer.workspace_id)
    await new_rule(store, newcomer.workspace_id, ("deal",))
    await poll(newcomer)  # the bootstrap: no alerts
    assert await outbox(store, newcomer.workspace_id) == []
    market.list(10, "20.00")
    market.fields[10] = JEANS | {"title": "Levi's 501 W32"}
    market.list(11, "39.00")  # not cheap enough
    market.fields[11] = JEANS
    await poll(newcomer)  # its first poll after the bootstrap
    [deal] = await outbox(store, newcomer.workspace_id)
    assert (deal.kind, deal.subject) == ("deal", "item:10")
    reason = deal.payload["reason"]
    assert reason.startswith(
        "asks €20.00, 52% under the €42.00 this niche sold for over its last 3 sales "
        "(confirmed; middle half €41.00-€43.00)"
    ), reason
    assert re.search(r"which took [0-9.]+ days \(newest [12] minutes? ago, oldest", reason)
    assert "buy below €24.90" in reason
    assert deal.payload["niche"]["level"] == "exact"
    assert deal.payload["buy_below"]["price"] == "24.90"
    # Nothing of the other workspace's monitor is in it; it is what the webhook contract says.
    assert veteran.id not in str(deal.payload)
    schema = {"components": {"schemas": SCHEMAS}, **event_schema("listing.deal")}
    jsonschema.Draft202012Validator(schema).validate(deal.payload)
