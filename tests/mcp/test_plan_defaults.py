"""A trial with its real limits, over /mcp: `create_analysis` without `max_items` reads what
the plan allows, a monitor's analysis succeeds whatever the monitor holds, too many listings
is an error naming the next plan up; `list_monitorings` counts, `list_analyses` names."""

from __future__ import annotations

import trio

from api.naming import catalogue_name
from api.settings import Settings
from tests.api.helpers import create_token, signed_in, wait_active, wait_finished_run
from tests.api.test_plan_defaults import HELD, TRIAL, URL
from tests.conftest import start_service
from tests.engine.fake_market import FakeMarket
from tests.mcp.test_data_tools import _structured, _tool_error


async def test_a_trial_agent_analyses_with_the_defaults(
    settings: Settings, market: FakeMarket, nursery: trio.Nursery
) -> None:
    for item in range(1, HELD + 1):
        market.list(item, price=f"{10 + item % 7}.00")
    service, stop = await start_service(
        nursery, settings.model_copy(update={"plan_quotas": TRIAL}), market
    )
    async with service.client() as browser:
        await signed_in(browser)
        token = await create_token(browser, ["read", "write"])

        created = await _structured(browser, "create_analysis", {"url": URL}, token)
        assert created["max_items"] == 200
        assert (await wait_finished_run(browser, created["id"]))["items"] == 200

        error = await _tool_error(browser, "create_analysis", {"url": URL, "max_items": 960}, token)
        assert error["code"] == "quota_exceeded" and "'starter'" in error["suggest"][0]
        assert "The Starter plan allows 1000 listings per run" in error["message"], error
        assert "largest plan" not in error["message"]

        monitor = await _structured(
            browser, "create_monitor", {"url": URL, "interval_seconds": 60}, token
        )
        await wait_active(browser, monitor["id"])
        listed = await _structured(browser, "list_monitorings", {}, token)
        assert listed["monitors"][0]["counts"]["open"] == HELD

        run = await _structured(browser, "create_analysis", {"monitor_id": monitor["id"]}, token)
        assert run["max_items"] is None
        done = await wait_finished_run(browser, run["id"])
        assert (done["state"], done["items"]) == ("succeeded", HELD), done

        # Named after what the (unnamed) monitor's catalogue asks for, never the raw URL.
        analyses = (await _structured(browser, "list_analyses", {}, token))["analyses"]
        assert [a["title"] for a in analyses] == [catalogue_name(URL)] * 2
        got = await _structured(
            browser, "get_analysis", {"analysis_id": done["analysis_id"]}, token
        )
        assert got["title"] == catalogue_name(monitor["url"]) and "://" not in got["title"]
    stop.set()
