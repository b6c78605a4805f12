"""The simulator's `2026-09` wire profile, two origins, the new fault knobs and the profile switch,
checked over real loopback sockets with a plain HTTP client against the simulator's ground truth.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import cache
from typing import Any

import httpx
import pytest
import trio

from scrapers.simulator import (
    CONDITION_LABELS,
    SimOrigins,
    SimulatorApp,
    SimulatorConfig,
    World,
    config_from_args,
    create_simulator_app,
    serve_app,
)

# Seed 12 has several reserved listings at the start; speed 1 keeps every state still while a
# test runs (a few seconds), so truth read first still holds when a page is fetched.
BASE = dict(seed=12, n_listings=2000, arrivals_per_day=100.0, horizon_days=2.0, speed=1.0)
LEGACY_FIELDS = ("brand_title", "size_title", "status", "path", "catalog_id")
BRAND = 12  # Zara: in four categories, the brand with the most listings
_LD = re.compile(r'<script type="application/ld\+json">(.*?)</script>', re.S)


@cache
def _world(profile: str, locale: str, promoted_share: float, padding: int) -> World:
    config = SimulatorConfig(
        profile=profile, locale=locale, promoted_share=promoted_share,
        item_page_padding=padding, **BASE,  # type: ignore[arg-type]
    )  # fmt: skip
    return World(config)


@dataclass
class Sim:
    app: SimulatorApp
    site: str
    api: str
    http: httpx.AsyncClient
    token: str = ""
    anon: str = ""

    async def warm_up(self) -> None:
        """The site origin's `/` hands out the session both origins accept."""
        response = await self.http.get(f"{self.site}/")
        assert response.status_code == 200
        self.token = response.cookies["access_token_web"]
        self.anon = response.cookies["anon_id"]

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "X-Anon-Id": self.anon}

    async def catalogue(self, query: str, origin: str | None = None) -> httpx.Response:
        url = f"{origin or self.api}/svc-catalogue/items?{query}"
        return await self.http.get(url, headers=self.auth())

    async def truth(self, ids: list[int] | None = None) -> dict[str, Any]:
        query = f"?ids={','.join(map(str, ids))}" if ids else ""
        response = await self.http.get(f"{self.site}/__sim__/truth{query}")
        data: dict[str, Any] = response.json()
        return data

    async def faults(self, **knobs: Any) -> None:
        response = await self.http.post(f"{self.site}/__sim__/faults", json=knobs)
        assert response.status_code == 200, response.text


@asynccontextmanager
async def running(
    profile: str = "2026-09", *, two: bool = True, locale: str = "en",
    promoted_share: float = 0.0, padding: int = 0,
) -> AsyncIterator[Sim]:  # fmt: skip
    app = create_simulator_app(_world(profile, locale, promoted_share, padding))
    async with trio.open_nursery() as nursery:
        if two:
            origins: SimOrigins = await nursery.start(serve_app, app, "127.0.0.1", 0, 0)
            site, api = origins.site, origins.api
        else:
            site = api = await nursery.start(serve_app, app)
        async with httpx.AsyncClient(timeout=5.0) as http:
            sim = Sim(app, site, api, http)
            await sim.warm_up()
            yield sim
        nursery.cancel_scope.cancel()


def _brands(items: list[dict[str, Any]]) -> set[str]:
    return {item["item_box"]["first_line"] for item in items}


def _assert_104(response: httpx.Response) -> None:
    assert response.status_code == 404
    assert response.json()["code"] == 104 and response.json()["message_code"] == "not_found"


async def test_attribute_filters_on_the_api_origin_and_legacy_names_ignored() -> None:
    async with running() as sim:
        assert sim.site != sim.api
        response = await sim.catalogue(f"attribute_ids[brand]={BRAND}&per_page=50")
        assert response.status_code == 200 and response.headers["content-type"].startswith(
            "application/json"
        )
        items = response.json()["items"]
        assert items
        truth = await sim.truth([item["id"] for item in items])
        assert {listing["brand_id"] for listing in truth["listings"]} == {BRAND}
        assert _brands(items) == {truth["brands"][str(BRAND)]}
        assert truth["categories"]["1904"] == "Women › Clothing › Jeans"  # paths, as pages say

        # The old names are accepted and ignored: 200, every brand.
        ignored = await sim.catalogue(f"brand_ids={BRAND}&catalog[]=1904&per_page=50")
        assert ignored.status_code == 200 and len(_brands(ignored.json()["items"])) > 1

        _assert_104(await sim.catalogue("per_page=5", origin=sim.site))  # not on www any more
        _assert_104(await sim.http.get(f"{sim.api}/api/v2/catalog/items", headers=sim.auth()))
        async with httpx.AsyncClient() as stranger:  # no warm-up cookies, no bearer
            anonymous = await stranger.get(f"{sim.api}/svc-catalogue/items")
        assert anonymous.status_code == 401 and anonymous.json()["code"] == 100
        for origin in (sim.site, sim.api):
            assert (await sim.http.get(f"{origin}/robots.txt")).status_code == 200
            assert (await sim.http.get(f"{origin}/")).status_code == 200
        log = sim.app.log
        assert any(r["api"] for r in log) and any(not r["api"] for r in log)


async def test_legacy_catalogue_path_is_gone_in_2026() -> None:
    async with running() as sim:
        response = await sim.http.get(
            f"{sim.site}/api/v2/catalog/items?catalog_ids=1904", headers=sim.auth()
        )
        _assert_104(response)


async def test_item_shape_and_localised_labels() -> None:
    async with running(locale="it") as sim:
        response = await sim.catalogue("per_page=40&order=newest_first")
        body = response.json()
        clock = (await sim.http.get(f"{sim.site}/__sim__/clock")).json()["sim_time"]
        assert isinstance(body["pagination"]["time"], int)
        assert abs(body["pagination"]["time"] - clock) <= 5
        assert set(body["pagination"]) >= {"current_page", "per_page", "total_entries",
                                           "total_pages", "time"}  # fmt: skip
        assert "search_tracking_params" in body
        labels = set(CONDITION_LABELS["it"].values())
        sized: list[bool] = []
        for item in body["items"]:
            assert isinstance(item["id"], int)
            assert not set(LEGACY_FIELDS) & set(item), item
            assert item["url"].startswith(f"/items/{item['id']}-")
            assert re.fullmatch(r"\d+\.\d\d", item["price"]["amount"])
            assert item["price"]["currency_code"] == "EUR"
            assert {"total_item_price", "service_fee", "favourite_count", "view_count"} <= set(item)
            assert "timestamp" not in item["photo"]["high_resolution"]
            assert item["photos"] and set(item["user"]) == {"id", "login", "business"}
            # "L · Buone", or the condition alone in a category without sizes (bags, games).
            *size, condition = item["item_box"]["second_line"].split(" · ")
            assert len(size) <= 1 and condition in labels, item["item_box"]
            sized.append(bool(size))
            assert item["promoted"] is False and item["content_source"] == "search"
        assert any(sized) and not all(sized)


async def test_promoted_items_are_extra_to_the_organic_order() -> None:
    async with running(promoted_share=0.25) as sim:
        items = (await sim.catalogue(f"attribute_ids[brand]={BRAND}&per_page=20")).json()["items"]
        promoted = [i for i in items if i["promoted"]]
        organic = [i for i in items if not i["promoted"]]
        assert promoted and len(organic) == 20
        assert all(i["content_source"] == "search_promoted_items" for i in promoted)
        # Newest first: the world's ids grow with the listing date.
        assert [i["id"] for i in organic] == sorted((i["id"] for i in organic), reverse=True)
        assert not {i["id"] for i in promoted} & {i["id"] for i in organic}
        truth = await sim.truth([i["id"] for i in promoted])
        assert all(t["brand_id"] == BRAND and t["state"] == "open" for t in truth["listings"])
        again = (await sim.catalogue(f"attribute_ids[brand]={BRAND}&per_page=20")).json()
        assert [i["id"] for i in again["items"]] == [i["id"] for i in items]  # deterministic


async def test_detail_refusal() -> None:
    async with running() as sim:
        item_id = (await sim.catalogue("per_page=1")).json()["items"][0]["id"]
        url = f"{sim.site}/api/v2/items/{item_id}/details"
        assert (await sim.http.get(url, headers=sim.auth())).status_code == 200
        await sim.faults(detail_refusal=1.0)
        refused = await sim.http.get(url, headers=sim.auth())
        assert refused.status_code == 403
        assert refused.headers["content-type"] == "application/json"
        assert refused.json()["code"] == 106 and refused.json()["message_code"] == "access_denied"


async def test_empty_and_filter_ignoring_answers() -> None:
    async with running() as sim:
        await sim.faults(first_empty=1, first_ignore_filters=1)
        query = f"attribute_ids[brand]={BRAND}&per_page=50"
        empty = (await sim.catalogue(query)).json()
        assert empty["items"] == [] and empty["pagination"]["total_entries"] == 0
        assert len(_brands((await sim.catalogue(query)).json()["items"])) > 1
        assert len(_brands((await sim.catalogue(query)).json()["items"])) == 1
        await sim.faults(rate_empty=1.0)
        assert (await sim.catalogue(query)).json()["items"] == []
        await sim.faults(rate_ignore_filters=1.0)
        assert len(_brands((await sim.catalogue(query)).json()["items"])) > 1
        for bad in ({"rate_empty": "x"}, {"first_ignore_filters": -1}, {"detail_refusal": True}):
            response = await sim.http.post(f"{sim.site}/__sim__/faults", json=bad)
            assert response.status_code == 422


async def test_item_pages_state_availability_from_json_ld() -> None:
    async with running(padding=50_000) as sim:
        truth = await sim.truth()
        by_state: dict[str, dict[str, Any]] = {}
        for listing in truth["listings"]:
            by_state.setdefault(listing["state"], listing)
        expected = {"open": "InStock", "sold": "SoldOut", "reserved": "Reserved"}
        for state, availability in expected.items():
            listing = by_state[state]
            redirect = await sim.http.get(f"{sim.site}/items/{listing['id']}")
            assert redirect.status_code == 301
            page = await sim.http.get(f"{sim.site}{redirect.headers['location']}")
            assert page.status_code == 200 and len(page.content) > 50_000
            match = _LD.search(page.text)
            assert match is not None and page.text.index("__NEXT_DATA__") > match.end()
            product = json.loads(match.group(1))
            offers = product["offers"]
            bare = offers["availability"].removeprefix("https://schema.org/")
            assert bare == availability, (state, offers)
            # Both spellings occur: URLs for even ids, bare values for odd ones.
            assert (offers["availability"] != bare) == (listing["id"] % 2 == 0)
            assert product["brand"]["name"] == truth["brands"][str(listing["brand_id"])]
            assert product["category"] == truth["categories"][str(listing["category_id"])]
            assert str(offers["price"]) == str(float(listing["price"])).removesuffix(".0")
        gone = await sim.http.get(f"{sim.site}/items/{by_state['deleted']['id']}-x")
        assert gone.status_code == 404


async def test_date_header_is_simulated_time() -> None:
    async with running(two=False) as sim:
        clock = (await sim.http.get(f"{sim.site}/__sim__/clock")).json()["sim_time"]
        for path in ("/", "/robots.txt", "/svc-catalogue/items?per_page=2", "/nowhere"):
            response = await sim.http.get(f"{sim.site}{path}", headers=sim.auth())
            dates = response.headers.get_list("date")
            assert len(dates) == 1, (path, dates)
            stated = parsedate_to_datetime(dates[0]).timestamp()
            assert abs(stated - clock) <= 5 and abs(stated - time.time()) > 86_400, path
        # One origin: today's catalogue answers on the site origin itself.
        assert (await sim.catalogue("per_page=2", origin=sim.site)).status_code == 200


async def test_profile_switch_moves_the_catalogue_mid_run() -> None:
    async with running("legacy") as sim:
        side = f"{sim.site}/__sim__/profile"
        assert (await sim.http.get(side)).json() == {"profile": "legacy"}
        legacy = f"{sim.site}/api/v2/catalog/items?brand_ids={BRAND}&per_page=10"
        old = await sim.http.get(legacy, headers=sim.auth())
        assert old.status_code == 200 and old.json()["code"] == 0
        assert old.json()["items"][0]["brand_title"] == "Zara"
        _assert_104(await sim.catalogue("per_page=5"))

        assert (await sim.http.post(side, json={"profile": "2026-09"})).status_code == 200
        _assert_104(await sim.http.get(legacy, headers=sim.auth()))
        new = await sim.catalogue(f"attribute_ids[brand]={BRAND}&per_page=10")
        assert new.status_code == 200 and _brands(new.json()["items"]) == {"Zara"}
        for bad in ({"profile": "2027-01"}, {"profile": 1}, {}, ["2026-09"]):
            assert (await sim.http.post(side, json=bad)).status_code == 422
        assert (await sim.http.post(side, content=b"{")).status_code == 422
        assert (await sim.http.get(side)).json() == {"profile": "2026-09"}


def test_cli_defaults_and_config_validation() -> None:
    config = config_from_args([])
    assert (config.profile, config.locale, config.promoted_share) == ("2026-09", "en", 0.1)
    assert config.faults.detail_refusal == 0.0 and config.item_page_padding == 0
    other = config_from_args(["--profile", "legacy", "--locale", "pl", "--detail-refusal", "0.9",
                              "--item-page-padding", "1000"])  # fmt: skip
    assert (other.profile, other.locale, other.faults.detail_refusal) == ("legacy", "pl", 0.9)
    assert other.item_page_padding == 1000
    assert SimulatorConfig().profile == "legacy"  # the library default: yesterday's site
    for bad in ({"profile": "2025"}, {"locale": "xx"}, {"promoted_share": 1.0}):
        with pytest.raises(ValueError):
            SimulatorConfig(**bad)  # type: ignore[arg-type]
    lines = SimOrigins("http://h:1", "http://h:2").env_lines()
    assert lines == ("NICHESCOPE_MARKET_ORIGINS=http://h:1,http://h:2",
                     "NICHESCOPE_MARKET_API_ORIGINS=http://h:1=http://h:2")  # fmt: skip
