"""The price book over REST and MCP: a niche's figures and what to pay for it, the buying
costs that set it, an analysis' niches priced; and isolation: another workspace reads nothing
of a niche its own listings do not fall in, and no answer names a monitor."""

from __future__ import annotations

from typing import Any

import trio_asyncio
from mcp import ClientSession

from store import ConfirmedState, ObservedListing, open_store
from tests.api.helpers import (
    active_monitor,
    assert_envelope,
    assert_invalid,
    bearer,
    create_token,
    signed_in,
    wait_finished_run,
)
from tests.api.test_monitor_evidence import _poll
from tests.conftest import RunningService, ServiceClient
from tests.mcp.test_sdk_client import with_session
from tests.store.notify_helpers import listing

URL = "https://www.vinted.fr/catalog?catalog[]=1904&brand_ids[]=53"
SITE = "https://www.vinted.fr"
JEANS = {
    "site": SITE,
    "category_id": "5",
    "brand": "Levi's",
    "size": "W32",
    "condition": "Very good",
}
BOOK = "/api/market/price-book"
COSTS = "/api/market/buying-costs"


async def _paused(client: ServiceClient) -> str:
    monitor_id = await active_monitor(client, URL, interval_seconds=None)
    await client.post(f"/api/monitoring/{monitor_id}/pause")
    return monitor_id


async def _market(service: RunningService, mine: str, theirs: str) -> None:
    """Three of my monitor's jeans sold at 20, 24 and 30 (one more open); the other
    workspace's monitor holds only a Diesel of the same category."""
    async with trio_asyncio.open_loop(), open_store(service.settings.database_url) as store:
        seen: tuple[ObservedListing, ...] = tuple(
            listing(i, p) for i, p in ((1, "20"), (2, "24"), (3, "30"), (4, "35"))
        )
        await _poll(store, mine, 1, seen=seen)
        sold = tuple(ConfirmedState(i, "sold", "item_page") for i in (1, 2, 3))
        await _poll(store, mine, 2, seen=seen[3:], confirmed=sold)
        await _poll(store, theirs, 1, seen=(listing(9, "50", brand="Diesel"),))


async def test_a_niche_priced_over_rest_and_mcp_and_only_for_its_watchers(
    service: RunningService, client: ServiceClient
) -> None:
    async with service.client() as stranger:
        await signed_in(stranger)
        mine, theirs = await _paused(client), await _paused(stranger)
        await _market(service, mine, theirs)

        book = await client.get(BOOK, params=JEANS)
        assert book.status_code == 200, book.text
        body = book.json()
        assert (body["level"], body["basis"], body["currency"]) == ("exact", "confirmed", "EUR")
        figures = body["figures"]
        assert (figures["sales"], figures["median_sold_price"]) == (3, "24.00")
        assert (figures["sold_price_p25"], figures["sold_price_p75"]) == ("22.00", "27.00")
        assert body["label"] == "Men › Jeans · Levi's · size W32 · Very good"
        assert body["explanation"].startswith("the €24.00 this niche sold for over its last 3")
        assert body["buy_below"]["price"] == "12.30"  # 24 - 30% - 4.00 - 0.50
        assert [level["level"] for level in body["levels"]] == ["exact", "brand", "category"]
        # The brand within the category, asked for as such.
        brand = await client.get(BOOK, params={"site": SITE, "category_id": 5, "brand": "Levi's"})
        assert brand.json()["level"] == "brand" and brand.json()["figures"]["sales"] == 3

        # The other workspace: my niche is unknown to it; its own category is readable and
        # holds the market's sales, and nothing names a monitor or a workspace.
        refused = await stranger.get(BOOK, params=JEANS)
        assert_envelope(refused, 404, "not_found")
        nowhere = await client.get(BOOK, params=JEANS | {"category_id": "6"})
        assert_envelope(nowhere, 404, "not_found")
        other_site = await client.get(BOOK, params=JEANS | {"site": "https://www.vinted.de"})
        assert_envelope(other_site, 404, "not_found")
        category = await stranger.get(BOOK, params={"site": SITE, "category_id": 5})
        assert category.status_code == 200 and category.json()["figures"]["sales"] == 3
        for text in (category.text, book.text):
            assert mine not in text and theirs not in text and "ws_" not in text
        misspelt = await client.get(BOOK, params=JEANS | {"colour": "red"})
        assert_invalid(misspelt, ["query", "colour"])

        # Buying costs: the defaults, then the workspace's own, which move the price.
        costs = (await client.get(COSTS)).json()
        assert (costs["shipping"], costs["packaging"], costs["margin"], costs["custom"]) == (
            "4.00", "0.50", "0.30", False
        )  # fmt: skip
        chosen = {"shipping": "2.00", "packaging": "0", "margin": "0.5"}
        put = await client.put(COSTS, json=chosen)
        assert put.status_code == 200, put.text
        assert put.json()["custom"] is True
        assert (await client.get(BOOK, params=JEANS)).json()["buy_below"]["price"] == "10.00"
        assert (await stranger.get(COSTS)).json()["custom"] is False
        for wrong in ({**chosen, "margin": "1"}, {**chosen, "shipping": "-1"}, {**chosen, "x": 1}):
            refused_costs = await client.put(COSTS, json=wrong)
            assert assert_invalid(refused_costs)[0]["loc"][0] == "body"

        # An analysis of my monitor: its niches priced; not the other workspace's to read.
        created = await client.post("/api/runs", json={"monitor_id": mine})
        run = await wait_finished_run(client, created.json()["id"])
        analysis_id = run["analysis_id"]
        priced = await client.get(f"/api/analyses/{analysis_id}/price-book")
        assert priced.status_code == 200, priced.text
        niches = priced.json()["niches"]
        assert priced.json()["site"] == SITE and niches
        assert any(n["book"] and n["book"]["buy_below"] for n in niches), niches
        assert_envelope(
            await stranger.get(f"/api/analyses/{analysis_id}/price-book"), 404, "not_found"
        )

        reader = await create_token(client, ["read"])
        stranger_reader = await create_token(stranger, ["read"])
    assert_envelope(await _put_with(service, reader, chosen), 403, "insufficient_scope")

    async def ask(session: ClientSession) -> Any:
        arguments: dict[str, Any] = JEANS | {"category_id": 5}
        return await session.call_tool("get_price_book", arguments)

    answer = await with_session(service, bearer(reader), ask)
    assert answer.is_error is False
    assert answer.structured_content["figures"]["sales"] == 3
    assert answer.structured_content["buy_below"]["price"] == "10.00"
    theirs_answer = await with_session(service, bearer(stranger_reader), ask)
    assert theirs_answer.is_error is True and "not_found" in theirs_answer.content[0].text


async def _put_with(service: RunningService, token: str, body: dict[str, Any]) -> Any:
    async with service.client(headers=bearer(token)) as agent:
        return await agent.put(COSTS, json=body)
